"""A federation of sites replayed event by event: the simulator's engine (pure: stdlib only).

Each site is one `EasyMachine` (FCFS with EASY backfilling on its processor count, the
same engine as the single-log replay). Jobs arrive in submit order; at each arrival
instant every machine is first advanced to that instant (completions, starts), then the
policy routes the jobs arriving at that instant, all in one pass, and each is queued at
the site chosen for it. A job keeps its real run time wherever it runs (the sites are
taken as equally fast).

What a policy sees is what a router could know at that instant: the arriving jobs and
every site's queue and running set as `TraceJob`s (processors, requested time, user,
submit), the running jobs' start times, and, through `Policy.started`/`Policy.ended`,
each wait once its job has started and each run time once its job has ended. A job's
real run time lives in `Truth`, which only the engine holds: no policy can route on it.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

from gateway.scheduling.queues.easy import EasyMachine, SimJob, Started


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """A site of the federation: a name and a processor count."""

    name: str
    processors: int


@dataclass(frozen=True, slots=True)
class TraceJob:
    """What anyone may know of a job before it runs; times in seconds.

    `origin` is the index of the site whose log the job comes from, `number` its job
    number there, `requested` the time it asked for (the scheduler's estimate),
    `executable` the log's application number (-1 when unknown).
    """

    origin: int
    number: int
    submit: float
    procs: int
    requested: float
    user: int
    queue: int
    executable: int = -1

    @property
    def account(self) -> str | None:
        """The account its site caps: its log and user (`origin/user`), None when the log
        does not know the user (`SwfJob.account`)."""
        return f"{self.origin}/{self.user}" if self.user >= 0 else None


@dataclass(frozen=True, slots=True)
class Truth:
    """What only the engine knows: the real run time, the wait the log recorded (-1 when
    unknown), kept for validation, and the scheduler's estimate where the job stated no
    request and no request was known for it (None: its `requested` time)."""

    runtime: float
    logged_wait: float
    estimate: float | None = None


Record = tuple[TraceJob, Truth]


class SiteView:
    """One site at a decision instant, as a policy may read it (no run times in it)."""

    def __init__(self, index: int, spec: SiteSpec) -> None:
        self.index = index
        self.name = spec.name
        self.processors = spec.processors
        self._machine = EasyMachine(spec.processors)
        self._jobs: dict[int, TraceJob] = {}
        self._running: dict[int, tuple[TraceJob, float]] = {}

    @property
    def free(self) -> int:
        """Processors idle now."""
        return self._machine.free

    @property
    def queued_count(self) -> int:
        """Jobs waiting in the queue now."""
        return len(self._machine.queue)

    def queued(self) -> list[TraceJob]:
        """The queue in FCFS order."""
        return [self._jobs[job.key] for job in self._machine.queue]

    def running(self) -> list[tuple[TraceJob, float]]:
        """The running jobs with their start times."""
        return list(self._running.values())


class Policy(ABC):
    """A routing policy; `route` is required, the observation hooks are optional."""

    name = ""

    @abstractmethod
    def route(self, now: float, jobs: Sequence[TraceJob], sites: Sequence[SiteView]
              ) -> list[int]:
        """The site index of each of `jobs` (all arriving at `now`), in order."""

    def started(self, job: TraceJob, site: int, start: float) -> None:
        """`job` started at `site` (its wait is now known)."""
        return None  # optional: a policy that learns from starts overrides it

    def ended(self, job: TraceJob, site: int, start: float, end: float) -> None:
        """`job` ended (its run time is now known)."""
        return None  # optional: a policy that learns from run times overrides it


def eligible(job: TraceJob, sites: Sequence[SiteView]) -> list[int]:
    """Sites big enough for `job`; its own site alone when none is (it is then clamped
    to that site's size, as the single-log replay does)."""
    fitting = [site.index for site in sites if site.processors >= job.procs]
    return fitting or [job.origin]


@dataclass
class SimResult:
    """Per job (in arrival order): where it came from, where and when it ran."""

    sites: list[SiteSpec]
    jobs: list[TraceJob]
    truths: list[Truth]
    site: list[int]
    start: list[float]
    procs: list[int]  # processors held (clamped to the site's size)


Progress = Callable[[int, float], None]


class Federation:
    """The engine: sites, a policy, and the bookkeeping of one replay."""

    def __init__(self, sites: Sequence[SiteSpec], policy: Policy) -> None:
        if not sites:
            raise ValueError("a federation has at least one site")
        self.views = [SiteView(index, spec) for index, spec in enumerate(sites)]
        self.policy = policy
        self.result = SimResult(list(sites), [], [], [], [], [])
        self._ends: list[tuple[float, int]] = []
        self.now = 0.0

    def run(self, records: Iterable[Record], progress: Progress | None = None,
            every: int = 10_000) -> SimResult:
        """Replay `records` (sorted by submit time) to the end; `progress(jobs, now)` every
        `every` jobs."""
        reported = 0
        for submit, batch in groupby(records, key=lambda record: record[0].submit):
            if submit < self.now:
                raise ValueError(f"jobs must arrive in submit order: {submit} after {self.now}")
            self._arrive(submit, list(batch))
            if progress is not None and len(self.result.jobs) - reported >= every:
                reported = len(self.result.jobs)
                progress(reported, self.now)
        for view in self.views:
            self._record(view, view._machine.drain())
        if progress is not None:
            progress(len(self.result.jobs), self.now)
        return self.result

    def _arrive(self, now: float, batch: list[Record]) -> None:
        self.now = now
        for view in self.views:
            self._record(view, view._machine.advance(now))
        self._end_until(now)
        jobs = [job for job, _ in batch]
        chosen = self.policy.route(now, jobs, self.views)
        if len(chosen) != len(jobs):
            raise ValueError(f"policy {self.policy.name!r} routed {len(chosen)} of "
                             f"{len(jobs)} jobs")
        result = self.result
        for (job, truth), index in zip(batch, chosen, strict=True):
            key = len(result.jobs)
            result.jobs.append(job)
            result.truths.append(truth)
            result.site.append(index)
            result.start.append(-1.0)
            result.procs.append(job.procs)
            view = self.views[index]
            view._jobs[key] = job
            # The requested time, or where the log gave none the engine's own estimate.
            estimate = job.requested if truth.estimate is None else truth.estimate
            sim = SimJob(key, now, job.procs, truth.runtime, estimate)
            self._record(view, view._machine.submit(sim))

    def _record(self, view: SiteView, started: list[Started]) -> None:
        result = self.result
        for sim, start in started:
            key = sim.key
            job = view._jobs.pop(key)
            result.start[key] = start
            result.procs[key] = sim.procs
            view._running[key] = (job, start)
            heapq.heappush(self._ends, (start + sim.runtime, key))
            self.policy.started(job, view.index, start)

    def _end_until(self, now: float) -> None:
        result = self.result
        ends = self._ends
        while ends and ends[0][0] <= now:
            end, key = heapq.heappop(ends)
            view = self.views[result.site[key]]
            job, start = view._running.pop(key)
            self.policy.ended(job, view.index, start, end)
