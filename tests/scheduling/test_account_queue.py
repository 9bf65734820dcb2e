"""An account's own queue: the start its held jobs leave a new job of that account."""

from __future__ import annotations

import pytest

from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import WaitPredictor
from gateway.scheduling.queues.account_queue import AccountQueues
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.routing_inputs import JobNeed, SiteState

# 100 processors, 3 held by running jobs: "a" runs two 1-processor jobs (100 s and 300 s
# of their limits left) and still has two waiting that would fit now: it is held.
RUNNING = ((1, 100.0, "a"), (1, 300.0, "a"), (1, 50.0, "b"))
WAITING = ((1, 1000.0, "a"), (1, 50.0, "a"), (1, 20.0, None))
Job = tuple[int, float, str | None]  # (processors, limit (left), account)


def _state(processors: int, running: tuple[Job, ...], waiting: tuple[Job, ...],
           owners: tuple[str | None, ...] | None = None) -> QueueState:
    """The queue of these jobs, each predicted to run to its limit; `owners` (default:
    the jobs' own accounts) as the scheduler names them."""
    return QueueState(
        processors, tuple((procs, limit, limit) for procs, limit, _ in running),
        tuple((procs, limit, limit) for procs, limit, _ in waiting),
        owners=tuple(owner for *_, owner in (*running, *waiting)) if owners is None
        else owners)


def _queues(processors: int, running: tuple[Job, ...], waiting: tuple[Job, ...]
            ) -> AccountQueues:
    return AccountQueues(_state(processors, running, waiting))


def test_held_jobs_go_through_the_slots_the_account_holds_now() -> None:
    queues = _queues(100, RUNNING, WAITING)
    # Slots [100, 300]: the first waiting job takes the 100 s one (-> 1100), the second
    # the 300 s one (-> 350): a new job of "a" starts at 350 s.
    assert queues["a"].start() == 350.0
    queues["a"].add(30.0)  # a job committed to the site joins the account's queue
    assert queues["a"].start() == 380.0
    # "b" has nothing waiting: no evidence of a hold. Unknown accounts are no one's.
    assert queues["b"].start() == 0.0
    assert set(queues) == {"a", "b"}


def test_jobs_waiting_for_processors_are_not_held() -> None:
    # 4 processors, all running: "a"'s waiting job waits for processors, which the
    # profiles count; its own queue says nothing.
    queues = _queues(4, ((2, 100.0, "a"), (2, 900.0, "b")), ((2, 60.0, "a"),))
    assert queues["a"].start() == 0.0
    # With a processor free for a 1-processor job of its own, it is held.
    queues = _queues(5, ((2, 100.0, "a"), (2, 900.0, "b")), ((1, 60.0, "a"),))
    assert queues["a"].start() == 160.0


def test_an_account_running_nothing_has_no_queue() -> None:
    assert "c" not in _queues(10, RUNNING, ((1, 60.0, "c"),))


def _site(owners: tuple[str | None, ...]) -> SiteState:
    return SiteState("s", _state(100, RUNNING, WAITING, owners))


OWNERS = tuple(owner for *_, owner in (*RUNNING, *WAITING))


def test_the_forecaster_raises_the_bound_never_the_median() -> None:
    job = JobNeed("a", "app", 1, 60.0)
    held = SiteForecaster([_site(OWNERS)], WaitPredictor(), RuntimePredictor())
    forecast = held.forecast(job, "s")
    # 97 processors free: the profiles start it now; its account's queue at 350 s.
    assert (forecast.wait_median, forecast.wait_bound) == (0.0, 350.0)
    assert "bound raised: the account's jobs ahead of it are held" in forecast.basis
    # The same queue without owners (or another account's job) is not held.
    plain = SiteForecaster([_site(())], WaitPredictor(), RuntimePredictor())
    assert plain.forecast(job, "s").wait_bound == 0.0
    assert held.forecast(JobNeed("b", "app", 1, 60.0), "s").wait_bound == 0.0
    # The account a site runs the job under is the one whose queue counts.
    mapped = JobNeed("someone", "app", 1, 60.0, accounts=(("s", "a"),))
    assert held.forecast(mapped, "s").wait_bound == 350.0


def test_a_commit_moves_the_next_forecast_of_the_account() -> None:
    forecaster = SiteForecaster([_site(OWNERS)], WaitPredictor(), RuntimePredictor())
    first, second = JobNeed("a", "app", 1, 60.0), JobNeed("a", "app", 1, 60.0)
    assert forecaster.forecast(first, "s").wait_bound == 350.0
    forecaster.commit(first, "s")
    # Same kind of job, same profiles' starts: only the account's queue moved.
    assert forecaster.forecast(second, "s").wait_bound == 410.0


def test_owners_must_match_the_jobs() -> None:
    with pytest.raises(ValueError, match="2 owners for 1 running and 0 queued jobs"):
        QueueState(10, running=((1, 5.0, 5.0),), owners=("a", "b"))
