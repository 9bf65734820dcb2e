"""A workload log's site as the gateway would have seen it, walked in time order (pure).

At each submit instant the walk knows what the gateway would know then: the queue
(jobs submitted and not started, in submit order; jobs started and not ended), the
waits of jobs that had started (fed to a `WaitPredictor`, each with the walltime
projection it had at submit, as production must) and the run times of jobs that had
ended (fed to a `RuntimePredictor`). The forecast evaluation, the runtime evaluation and
the routing benchmark walk logs with it.

An SWF log names a job's application by its executable number where the log has one
(CTC does; KTH, HPC2N and SDSC-BLUE record -1): that number is the fingerprint, else the
empty string, so the history is the user's own (Tsafrir et al.'s key). Processor counts
are not part of the fingerprint: the runtime predictor keeps runs per count itself.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

from gateway.scheduling.evaluation.submit_limits import SubmitLimits
from gateway.scheduling.prediction.late_waits import LateWaits
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPrediction, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.swf import SwfJob


def fingerprint(job: SwfJob) -> str:
    """The application of a log job: its executable number when known."""
    return str(job.executable) if job.executable >= 0 else ""


def usable(job: SwfJob) -> bool:
    """A job that ran: known wait, processors and run time."""
    return job.wait >= 0 and job.procs > 0 and job.run >= 0


@dataclass(slots=True)
class _Held:
    job: SwfJob
    limit: float
    predicted: float
    known: JobClass
    given: WaitPrediction | None
    late_features: tuple[float, ...] | None
    queued: tuple[int, float, float]  # (processors, predicted, limit) while it waits
    owner: str | None
    ends: tuple[int, float, float] = (0, 0.0, 0.0)  # (processors, predicted end, limit's)


_QUEUED = attrgetter("queued")
_OWNER = attrgetter("owner")
_ENDS = attrgetter("ends")


class LogWalk:
    """One log's queue and histories at the walk's instant (advance, then read, then submit)."""

    def __init__(self, site: str, processors: int, waits: WaitPredictor | None = None,
                 runtimes: RuntimePredictor | None = None,
                 on_start: Callable[[SwfJob, JobClass], None] | None = None,
                 on_end: Callable[[SwfJob], None] | None = None,
                 late: LateWaits | None = None) -> None:
        """`on_start` is told of each job and its class as it starts (its wait known),
        after `waits` and `late` (the late-wait model, fed the features a job was
        submitted with);
        `on_end` as it ends (its run time known), after `runtimes`."""
        self.site = site
        self.on_start = on_start
        self.on_end = on_end
        self.processors = processors
        self.waits = waits if waits is not None else WaitPredictor()
        self.runtimes = runtimes if runtimes is not None else RuntimePredictor()
        self.late = late
        self.queued: dict[int, _Held] = {}  # submit order is queue order
        self.running: dict[int, _Held] = {}
        self._starts: list[tuple[int, int]] = []
        self._ends: list[tuple[int, int]] = []
        self._seq = 0
        self._limits = SubmitLimits()
        self.events = 0  # starts and ends so far: while it stays, the queue only grew

    def limit(self, job: SwfJob) -> float:
        """The job's time limit as known at its submit (`submit_limits.py`); ask once per
        job, in submit order."""
        return self._limits.limit(job)

    def need(self, job: SwfJob) -> tuple[str, str, int]:
        """(user, fingerprint, processors) of a log job, as the predictors key them."""
        return str(job.user), fingerprint(job), job.procs

    def advance(self, now: float) -> None:
        """Start what started before `now` (its wait becomes known); end what ended."""
        while True:
            start = self._starts[0][0] if self._starts else None
            end = self._ends[0][0] if self._ends else None
            # Events in time order: an end frees history before a later start reads it.
            if end is not None and end <= now and (start is None or end <= start):
                _, seq = heapq.heappop(self._ends)
                self.events += 1
                held = self.running.pop(seq)
                user, app, procs = self.need(held.job)
                self.runtimes.observe(user, app, self.site, procs, float(held.job.run))
                if self.on_end is not None:
                    self.on_end(held.job)
            elif start is not None and start < now:
                _, seq = heapq.heappop(self._starts)
                self.events += 1
                held = self.queued.pop(seq)
                self.running[seq] = held
                job = held.job
                self.waits.observe(held.known, float(job.wait), predicted=held.given)
                if self.late is not None and held.late_features is not None:
                    self.late.observe(self.site, seq, held.late_features, float(job.wait))
                if self.on_start is not None:
                    self.on_start(job, held.known)
                held.ends = (job.procs, job.start + held.predicted, job.start + held.limit)
                heapq.heappush(self._ends, (job.start + job.run, seq))
            else:
                return

    def state(self, now: float) -> QueueState:
        """The queue at `now`: running (procs, remaining predicted, remaining limit) and
        queued (procs, predicted, limit), both predictions as made at submit, and each
        job's account (its user)."""
        running = tuple((procs, predicted_end - now, limit_end - now)
                        for procs, predicted_end, limit_end
                        in map(_ENDS, self.running.values()))
        # Read at every submit: what does not change while a job waits is kept.
        queued = tuple(map(_QUEUED, self.queued.values()))
        owners = tuple(map(_OWNER, chain(self.running.values(), self.queued.values())))
        return QueueState(self.processors, running, queued, owners=owners)

    def submit(self, job: SwfJob, limit: float, predicted: float, known: JobClass,
               given: WaitPrediction | None = None,
               late_features: tuple[float, ...] | None = None) -> None:
        """Queue `job` (it starts and ends at its logged times) with its predicted run
        time, the class its wait will be recorded in, the wait prediction it had and
        what the late-wait model knew of it (`Forecast.late_features`)."""
        self._seq += 1
        # A queued job's processors as the gateway knows them: its request.
        self.queued[self._seq] = _Held(
            job, limit, predicted, known, given, late_features,
            (min(job.submit_procs, self.processors), predicted, limit), job.account)
        heapq.heappush(self._starts, (job.start, self._seq))
