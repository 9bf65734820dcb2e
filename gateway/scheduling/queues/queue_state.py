"""A site's queue at an instant, and its EASY projection (pure).

`QueueState` is what an adapter's queue snapshot becomes: the running jobs with their
remaining times, the queued ones in queue order (and, where the scheduler gives them,
its planned starts and each job's account). `Projection` runs the EASY engine over it
(`easy.project_runs`: time limits drive the backfilling decisions, predicted run times
the completions; a queue deeper than `deep_queue.EXACT` jobs, its first ones, the rest
as the work they carry): each queued job's start and the intervals the jobs take, from
which `queue_profile.QueueProfile` builds the free processors over time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter

from gateway.scheduling.queues.deep_queue import EXACT, Busy, absorb
from gateway.scheduling.queues.easy import project_runs

Running = tuple[int, float, float]  # (processors, remaining predicted s, remaining limit s)
Queued = tuple[int, float, float]  # (processors, predicted run time s, time limit s)
_PREDICTED, _LIMIT = itemgetter(1), itemgetter(2)


@dataclass(frozen=True, slots=True)
class QueueState:
    """One site's queue at an instant: its processors, running and queued jobs.

    Times are seconds. A running job past its predicted end (remaining predicted <= 0)
    is still running: its remaining limit stands in for the prediction. `planned`, when
    given, holds the scheduler's own start estimate for each queued job (seconds from
    now, None where it gave none; Slurm's backfill plan, PBS `estimated.start_time`).
    `owners`, when given, names the account of each running job, then of each queued
    job (None where unknown): `account_queue.py` reads an account's own queue from it.
    """

    processors: int
    running: tuple[Running, ...] = ()
    queued: tuple[Queued, ...] = ()
    planned: tuple[float | None, ...] = ()
    owners: tuple[str | None, ...] = ()

    def __post_init__(self) -> None:
        if self.processors <= 0:
            raise ValueError("a site has at least one processor")
        # A job without a limit of its own runs under its queue's maximum: give that.
        # (Checked in C: a walk builds a snapshot of hundreds of jobs at every submit.)
        jobs = (self.running, self.queued)
        if not (all(map(math.isfinite, map(_LIMIT, chain.from_iterable(jobs))))
                and not any(map(math.isnan, map(_PREDICTED, chain.from_iterable(jobs))))):
            raise ValueError("every job's time limit must be finite (the queue's "
                             "maximum for a job that set none), its prediction a number")
        if self.planned and len(self.planned) != len(self.queued):
            raise ValueError(f"{len(self.planned)} planned starts for "
                             f"{len(self.queued)} queued jobs")
        if self.owners and len(self.owners) != len(self.running) + len(self.queued):
            raise ValueError(f"{len(self.owners)} owners for {len(self.running)} running "
                             f"and {len(self.queued)} queued jobs")

    def unchanged_for(self) -> float:
        """Seconds until this snapshot would change with nothing happening: the first
        running job to reach its predicted end (it then runs to its limit) or its limit.
        Until then its profiles, advanced in time (`QueueProfile.advance`), are the ones
        it would project then."""
        return min((min(predicted if predicted > 0 else limit, limit)
                    for _, predicted, limit in self.running), default=math.inf)


def _run(predicted: float, limit: float, limits_as_runtimes: bool) -> float:
    """How long a queued job runs in a projection."""
    return limit if limits_as_runtimes else min(max(predicted, 0.0), limit)


def projected_starts(state: QueueState, limits_as_runtimes: bool = False,
                     until_index: int | None = None) -> list[float | None]:
    """When each queued job of `state` starts in its EASY projection, seconds from now
    (None: never, on this machine; or, with `until_index`, not projected: the projection
    stops once that job has its start), in queue order; behind the first
    `deep_queue.EXACT` jobs, when the work ahead of it has drained (`deep_queue`). The
    scheduler's `planned` starts are not applied (they are the scheduler's word, not the
    projection's)."""
    return Projection(state, limits_as_runtimes, until_index).starts


class Projection:
    """A queue's EASY projection: each queued job's start (see `projected_starts`), the
    run times of the running jobs and of the first `EXACT` queued ones, what the running
    jobs and the deep queue's work take (`busy`: the profile's intervals but for the first
    `EXACT` queued jobs', which a plan may move)."""

    __slots__ = ("busy", "runs", "starts")

    def __init__(self, state: QueueState, limits_as_runtimes: bool,
                 until_index: int | None = None) -> None:
        processors = state.processors
        running = []
        self.busy: list[Busy] = []
        for procs, predicted, limit in state.running:
            limit = max(limit, 0.0)
            # A running job past its predicted end runs to its limit.
            run = limit if limits_as_runtimes or predicted <= 0 else min(predicted, limit)
            running.append((procs, limit, run))
            self.busy.append((0.0, run, min(procs, processors)))
        self.runs = [_run(predicted, limit, limits_as_runtimes)
                     for _, predicted, limit in state.queued[:EXACT]]
        exact = [(procs, limit, run)
                 for (procs, _, limit), run in zip(state.queued, self.runs, strict=False)]
        deep = len(state.queued) - len(exact)
        if until_index is not None and until_index < EXACT:
            self.starts = project_runs(processors, running, exact, until_index) + [None] * deep
            return
        self.starts = starts = project_runs(processors, running, exact)
        if not deep:
            return
        busy = self.busy + [(start, start + run, min(max(procs, 1), processors))
                            for (procs, _, run), start in zip(exact, starts, strict=True)
                            if start is not None]
        work = [min(max(procs, 1), processors) * _run(predicted, limit, limits_as_runtimes)
                for procs, predicted, limit in state.queued[EXACT:]]
        after = max((start for start in starts if start is not None), default=0.0)
        tail, taken = absorb(processors, busy, work, after)
        starts.extend(tail)
        self.busy.extend(taken)
