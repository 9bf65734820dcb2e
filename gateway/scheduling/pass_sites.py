"""What a routing pass's forecaster keeps per site (pure; `forecaster.py` uses it).

`PassSite`: a site's two profiles for the pass (built once, then only reserved on), its
backlog, each account's own queue there, and per kind of job (`job_kind`: what a
forecast reads of a job besides its starts) its last forecast (`KindForecast`) and the
last lower bound found on its completion. `Starts`: a job's starts on a site's two
profiles, kept from a forecast for the commit that follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter, mul

from gateway.scheduling.prediction.late_waits import QueueLoad
from gateway.scheduling.prediction.runtime_predictor import RuntimeEstimate
from gateway.scheduling.prediction.wait_predictor import WaitPrediction
from gateway.scheduling.queues.account_queue import AccountQueue, AccountQueues
from gateway.scheduling.queues.queue_profile import QueueProfile
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed, Profiles, SiteState

_PROCS, _PREDICTED = itemgetter(0), itemgetter(1)
# What a forecast reads of a job besides its starts (`JobNeed` but its key).
Kind = tuple[str, str, int, float, str, tuple[tuple[str, int], ...], int]


def job_kind(job: JobNeed) -> Kind:
    """What a forecast reads of a job: jobs of one kind get one forecast at a site."""
    return (job.user, job.fingerprint, job.procs, job.time_limit, job.queue, job.inputs,
            job.output_bytes)


class KindForecast:
    """A kind of job's last forecast at a site and what it was made for: the mode, the
    job's two starts, the site's backlog, and the profiles' `changes` when the starts
    were last known to hold (while neither profile has changed since, they still do)."""

    __slots__ = ("backlog", "forecast", "held", "history", "likely_changes", "likely_start",
                 "mode", "projection", "walltime_changes", "walltime_start")

    def __init__(self, mode: str, site: PassSite, placed: Starts, forecast: Forecast,
                 projection: int, history: WaitPrediction | None, held: float) -> None:
        self.mode = mode
        self.held = held  # the start the account's own queue gave (`account_queue.py`)
        # The walltime start's projection class and the wait predictor's answer for it:
        # the kind's other classes are fixed, so the same class is the same answer.
        self.projection = projection
        self.history = history
        self.likely_start = placed.likely_start
        self.walltime_start = placed.walltime_start
        self.likely_changes = site.likely.changes
        self.walltime_changes = site.walltime.changes
        self.backlog = site.backlog
        self.forecast = forecast


class PassSite:
    """A site's two profiles for the pass (built once, then only reserved on), its
    backlog: the predicted work of its running and queued jobs over its processors, per
    kind of job its last forecast there (`KindForecast`) and the last bound on its
    completion, and each account's own queue there (`account_queue.py`), read from the
    snapshot when first asked."""

    __slots__ = ("_accounts", "_load", "_queue", "_queued_work", "backlog", "cached", "floors",
                 "forecasts", "likely", "local_time", "name", "processors", "walltime")

    def __init__(self, state: SiteState, profiles: Profiles | None = None) -> None:
        queue = state.queue
        self.name = state.name
        self.cached = state.cached
        self.local_time = state.local_time
        self.processors = queue.processors
        self.likely, self.walltime = profiles if profiles is not None else (
            QueueProfile.project(queue), QueueProfile.project(queue, limits_as_runtimes=True))
        work = sum(procs * max(predicted if predicted > 0 else limit, 0.0)
                   for procs, predicted, limit in queue.running)
        queued = queue.queued  # summed in C: a walk's queue may hold thousands of jobs
        self._queued_work = sum(map(mul, map(_PROCS, queued), map(_PREDICTED, queued)))
        work += self._queued_work
        self.backlog = work / queue.processors
        self.forecasts: dict[Kind, KindForecast] = {}
        # Per kind of job, the last lower bound found on its completion here (it stays
        # one: commits only delay starts), `SiteForecaster.earliest_completion`.
        self.floors: dict[Kind, float] = {}
        self._queue = queue
        self._accounts: AccountQueues | None = None
        self._load: QueueLoad | None = None

    @property
    def load(self) -> QueueLoad:
        """The snapshot's load, as the late-wait model reads it (read when first asked)."""
        if self._load is None:
            self._load = QueueLoad.of(self._queue, self._queued_work)
        return self._load

    def account(self, name: str) -> AccountQueue | None:
        """The account's own queue here (None: it runs nothing here)."""
        if self._accounts is None:
            self._accounts = AccountQueues(self._queue)
        return self._accounts.get(name)

    def held(self, account: str) -> float:
        """When a job of `account` joining the queue now starts under its own queue."""
        queue = self.account(account)
        return queue.start() if queue is not None else 0.0


@dataclass(frozen=True, slots=True)
class Starts:
    """A job's starts on a site's two profiles and its run time there, kept from a
    forecast for the commit that follows."""

    job: JobNeed
    runtime: RuntimeEstimate
    likely_start: float
    walltime_start: float
