"""A queue's deep part as its work: exact below `EXACT` jobs, bounded cost beyond it."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.queues import queue_state
from gateway.scheduling.queues.deep_queue import EXACT, absorb
from gateway.scheduling.queues.easy import project_runs
from gateway.scheduling.queues.queue_profile import QueueProfile
from gateway.scheduling.queues.queue_state import QueueState, projected_starts


def test_the_tail_takes_what_is_free_in_time_order() -> None:
    # 5 of 10 processors busy for 100 s, then all 10 for [100, 200): 700 processor-seconds
    # of tail take the 500 free before 100 s, then wait for 200 s.
    starts, taken = absorb(10, [(0.0, 100.0, 5), (100.0, 200.0, 10)], [300.0, 200.0, 200.0])
    assert starts == [0.0, 60.0, 200.0]
    assert taken == [(0.0, 100.0, 5), (200.0, 220.0, 10)]


def test_a_tail_on_a_free_machine_drains_at_full_speed() -> None:
    starts, taken = absorb(8, [], [800.0] * 3)
    assert starts == [0.0, 100.0, 200.0]
    assert taken == [(0.0, 300.0, 8)]


def test_whole_machine_jobs_start_one_after_another_across_the_boundary() -> None:
    # Each job needs the whole machine: EASY and the drained work agree exactly.
    queued = tuple((16, 100.0, 100.0) for _ in range(EXACT + 40))
    starts = projected_starts(QueueState(16, running=((16, 50.0, 50.0),), queued=queued))
    assert starts == pytest.approx([50.0 + 100.0 * i for i in range(len(queued))])
    profile = QueueProfile.project(QueueState(16, running=((16, 50.0, 50.0),),
                                              queued=queued))
    assert profile.earliest_start(1, 10.0) == pytest.approx(50.0 + 100.0 * len(queued))


@pytest.mark.parametrize("seed", range(20))
def test_a_queue_up_to_exact_jobs_is_projected_by_easy_alone(seed: int) -> None:
    rng = random.Random(seed)
    processors = rng.choice((8, 64, 512))
    running = tuple((rng.randint(1, processors // 2), rng.uniform(1, 3000),
                     rng.uniform(3000, 6000)) for _ in range(rng.randint(0, 3)))
    queued = tuple((rng.randint(1, processors), rng.uniform(10, 3000), 4000.0)
                   for _ in range(rng.randint(0, EXACT)))
    state = QueueState(processors, running, queued)
    expected = project_runs(
        processors,
        [(p, max(limit, 0.0), min(max(pred, 0.0), limit)) for p, pred, limit in running],
        [(p, limit, min(pred, limit)) for p, pred, limit in queued])
    assert projected_starts(state) == expected


def test_a_deep_queue_costs_the_engine_exact_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def counting(processors: int, running: list[tuple[int, float, float]],
                 queued: list[tuple[int, float, float]], until_index: int | None = None
                 ) -> list[float | None]:
        seen.append(len(queued))
        return project_runs(processors, running, queued, until_index)

    monkeypatch.setattr(queue_state, "project_runs", counting)
    rng = random.Random(3)
    queued = tuple((rng.randint(1, 64), rng.uniform(10, 3000), 4000.0) for _ in range(5000))
    state = QueueState(64, queued=queued)
    starts = projected_starts(state)
    QueueProfile.project(state, limits_as_runtimes=True)
    assert seen == [EXACT, EXACT]
    # Every job of the deep part starts, in queue order, no earlier than the machine
    # could have run the work ahead of it.
    tail = starts[EXACT:]
    assert all(start is not None for start in tail)
    assert tail == sorted(tail)
    work_ahead = sum(p * min(pred, limit) for p, pred, limit in queued[:-1])
    assert tail[-1] == pytest.approx(work_ahead / 64, rel=0.05)


def test_a_plan_for_a_job_of_the_deep_queue_is_its_work_alone() -> None:
    # The scheduler's plan places the exact part's jobs; the deep part's work is counted
    # once, where it drains, whatever the plan says.
    queued = tuple((4, 100.0, 100.0) for _ in range(EXACT + 1))
    planned = (*(None for _ in range(EXACT)), 5000.0)
    plain = QueueProfile.project(QueueState(4, queued=queued))
    with_plan = QueueProfile.project(QueueState(4, queued=queued, planned=planned))
    assert with_plan.steps() == plain.steps()
