"""FCFS with EASY backfilling on a processor count: an event-driven model (pure: stdlib only).

EASY (Lifka 1995; Mu'alem and Feitelson 2001): jobs start in arrival order while they
fit; when the head of the queue does not fit, it gets a reservation at the *shadow time*
(the earliest instant at which enough processors are free, by the running jobs'
estimated ends), and later jobs may jump ahead ("backfill") if they fit now and either
end, by their estimate, before the shadow time or use only the *extra* processors the
head will not need. Estimates drive decisions; actual run times drive completions, so a
job that ends early frees its processors early, as on a real machine.

Two uses share one engine:
- `replay`: a whole log on its machine (the trace simulator's core);
- `project`: the current queue forward from a snapshot (running jobs with remaining
  estimated times, queued jobs with runtime estimates), giving each queued job's start.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(slots=True)
class SimJob:
    """A job as the engine sees it; `key` is the caller's identifier, times are seconds."""

    key: int
    submit: float
    procs: int
    runtime: float
    estimate: float


Started = tuple[SimJob, float]


class EasyMachine:
    """One machine's running set and FCFS queue, advanced event by event."""

    def __init__(self, processors: int, now: float = 0.0) -> None:
        if processors <= 0:
            raise ValueError("a machine has at least one processor")
        self.processors = processors
        self.free = processors
        self.now = now
        self.queue: list[SimJob] = []
        # (estimated end, seq, procs), sorted: the shadow-time walk reads it in order.
        self._by_estimate: list[tuple[float, int, int]] = []
        # (actual end, seq, estimated end, procs): completions in time order.
        self._ends: list[tuple[float, int, float, int]] = []
        self._seq = 0

    def add_running(self, running: Iterable[tuple[int, float, float]]) -> None:
        """Place already running jobs (a snapshot), each (processors, estimated end, actual
        end); call before any `submit`. Sorted and heaped once: a snapshot of hundreds of
        running jobs is read at every projection."""
        processors = self.processors
        seq = self._seq
        by_estimate = self._by_estimate
        ends = self._ends
        taken = 0
        for procs, estimated_end, actual_end in running:
            procs = min(procs, processors)
            seq += 1
            taken += procs
            by_estimate.append((estimated_end, seq, procs))
            ends.append((actual_end, seq, estimated_end, procs))
        self._seq = seq
        self.free -= taken
        by_estimate.sort()
        heapq.heapify(ends)

    def submit(self, job: SimJob) -> list[Started]:
        """Queue `job` at its submit time (not earlier than `now`) and return what starts."""
        started = self.advance(job.submit)
        self.now = max(self.now, job.submit)
        job.procs = min(max(job.procs, 1), self.processors)
        self.queue.append(job)
        started.extend(self._schedule())
        return started

    def advance(self, until: float) -> list[Started]:
        """Process every completion up to `until` (inclusive) and return the jobs started."""
        started: list[Started] = []
        ends = self._ends
        by_estimate = self._by_estimate
        while ends and ends[0][0] <= until:
            instant = ends[0][0]
            while ends and ends[0][0] == instant:
                _, seq, estimated_end, procs = heapq.heappop(ends)
                self.free += procs
                del by_estimate[bisect_left(by_estimate, (estimated_end, seq))]
            self.now = instant
            if self.queue:
                started.extend(self._schedule())
        if until > self.now:
            self.now = until
        return started

    def drain(self) -> list[Started]:
        """Run until every queued job has started."""
        started: list[Started] = []
        while self.queue and self._ends:
            started.extend(self.advance(self._ends[0][0]))
        return started

    def next_completion(self) -> float | None:
        """The next actual completion time, or None when nothing runs."""
        return self._ends[0][0] if self._ends else None

    def _occupy(self, procs: int, estimated_end: float, actual_end: float) -> None:
        self._seq += 1
        self.free -= procs
        insort(self._by_estimate, (estimated_end, self._seq, procs))
        heapq.heappush(self._ends, (actual_end, self._seq, estimated_end, procs))

    def _start(self, job: SimJob) -> Started:
        now = self.now
        self._occupy(job.procs, now + job.estimate, now + job.runtime)
        return job, now

    def _reservation(self, need: int) -> tuple[float, int]:
        """Shadow time and extra processors for a head job needing `need` processors."""
        available = self.free
        for estimated_end, _, procs in self._by_estimate:
            available += procs
            if available >= need:
                # A job past its estimate is treated as ending now (it may overrun slightly).
                return max(estimated_end, self.now), available - need
        raise AssertionError("a job never needs more than the machine's processors")

    def schedule(self) -> list[Started]:
        """Start what the EASY rules allow at `now` (after `add_running`/queue changes)."""
        return self._schedule()

    def _schedule(self) -> list[Started]:
        # The hot loop of every projection: the free count is kept in a local (each
        # start takes its processors from both) and the queue read by index.
        queue = self.queue
        started: list[Started] = []
        free = self.free
        head_count = 0
        count = len(queue)
        while head_count < count:
            job = queue[head_count]
            if job.procs > free:
                break
            started.append(self._start(job))
            free -= job.procs
            head_count += 1
        if head_count:
            del queue[:head_count]
            count -= head_count
        if count < 2 or free <= 0:  # below 0: a snapshot running more than the machine
            return started
        shadow, extra = self._reservation(queue[0].procs)
        now = self.now
        index = 1
        while index < count:
            job = queue[index]
            procs = job.procs
            if procs > free:
                index += 1
                continue
            if now + job.estimate > shadow:  # it would delay the head unless it fits
                if procs > extra:            # in the processors the head leaves over
                    index += 1
                    continue
                extra -= procs
            started.append(self._start(job))
            del queue[index]
            count -= 1
            free -= procs
            if free == 0:
                break
        return started


def replay(jobs: Iterable[SimJob], processors: int) -> Iterator[Started]:
    """Replay jobs (sorted by submit time) on one machine; yield each job with its start."""
    machine = EasyMachine(processors)
    for job in jobs:
        yield from machine.submit(job)
    yield from machine.drain()


def project(
    processors: int,
    running: Sequence[tuple[int, float]],
    queued: Sequence[tuple[int, float]],
    until_index: int | None = None,
) -> list[float | None]:
    """Projected start, relative to now, of each queued job, estimates taken as run times.

    `running` holds (processors, remaining estimated seconds) and `queued` holds
    (processors, estimated run time) in queue order. With `until_index`, the projection
    stops once that queued job has started (later entries stay None).
    """
    return project_runs(
        processors,
        [(procs, remaining, remaining) for procs, remaining in running],
        [(procs, estimate, estimate) for procs, estimate in queued],
        until_index,
    )


def project_runs(
    processors: int,
    running: Sequence[tuple[int, float, float]],
    queued: Sequence[tuple[int, float, float]],
    until_index: int | None = None,
) -> list[float | None]:
    """`project` with run times apart from estimates, as on a real machine.

    `running` holds (processors, remaining estimate, remaining run time) and `queued`
    (processors, estimate, run time): the estimates (time limits) drive the backfilling
    decisions, the run times (predicted) the completions, as in `replay`.
    """
    if not queued:
        return []
    machine = EasyMachine(processors)
    machine.add_running((procs, max(estimate, 0.0), max(remaining, 0.0))
                        for procs, estimate, remaining in running)
    starts: list[float | None] = [None] * len(queued)
    machine.queue.extend(SimJob(i, 0.0, min(max(procs, 1), processors), run, est)
                         for i, (procs, est, run) in enumerate(queued))
    pending = machine.schedule()
    while True:
        for job, start in pending:
            starts[job.key] = start
        if until_index is not None and starts[until_index] is not None:
            return starts
        following = machine.next_completion()
        if not machine.queue or following is None:
            return starts
        pending = machine.advance(following)
