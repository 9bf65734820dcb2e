"""A site's free processors over time, from its queue, for placing new jobs (pure).

The queue (running jobs with their remaining times, queued jobs in queue order) is
projected with the EASY engine (`easy.project_runs`: time limits drive the backfilling
decisions, predicted run times the completions; a queue deeper than `deep_queue.EXACT`
jobs, its first ones, the rest as the work they carry), a queued job the scheduler has
planned a start for placed at that plan instead; every job then occupies its processors
over [start, start + run time), and what is left is a step function of free processors,
seconds from now. A new job at the queue's tail starts at the first instant from which
enough processors stay free for its whole run: it may fill a hole the projection left,
but never delays a job already placed (conservative backfilling's rule for a new
arrival; EASY protects only the head, so a real EASY machine may start it earlier still).
Jobs routed in the same pass `reserve` their interval, so the next one sees them.

The step function is kept in blocks of breakpoints, each with the minimum and maximum
free count it holds and, per job size asked, a summary (its first and last step too full
for that size, its longest run of fitting steps between them): a query reads each block
in constant time unless the answer lies inside it, so a profile carrying thousands of
reservations answers in tens of microseconds. An answer is kept per (size, run time)
until a later reservation or `advance` takes processors within a microsecond of its
interval (reservations only take processors, so an earlier start cannot open up, and
the walk would find the same start again): a routing pass asks each site the same few
questions for thousands of jobs and commits only a few of them there.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from gateway.scheduling.queues.deep_queue import free_steps
from gateway.scheduling.queues.queue_state import Projection, QueueState

_BLOCK = 32  # breakpoints per block after a split; blocks split beyond twice this
_SAME = 1e-6  # seconds: breakpoints closer than this are one


class QueueProfile:
    """Free processors from now (time 0) on; place and reserve new jobs."""

    def __init__(self, processors: int, busy: Iterable[tuple[float, float, int]] = ()) -> None:
        """A profile of `processors` with `busy` (start, end, processors) intervals taken."""
        if processors <= 0:
            raise ValueError("a site has at least one processor")
        self.processors = processors
        times, free = free_steps(processors, busy)
        self._times: list[list[float]] = []
        self._free: list[list[int]] = []
        for i in range(0, len(times), _BLOCK):
            self._times.append(times[i:i + _BLOCK])
            self._free.append(free[i:i + _BLOCK])
        self._firsts = [block[0] for block in self._times]
        self._lo = [min(block) for block in self._free]
        self._hi = [max(block) for block in self._free]
        # Per job size: runtimes asked and their answers (sorted by runtime).
        self._answers: dict[int, tuple[list[float], list[float]]] = {}
        # Per block, per job size: its summary (see _read_block; dropped when it changes).
        self._cache: list[dict[int, tuple[int, int, float]]] = [{} for _ in self._times]
        # Where "now" lies on the breakpoints' clock (`advance` moves it; 0 when built).
        self._origin = 0.0
        # Every interval taken since built, in order (breakpoints' clock), and per
        # (size, run time) the last answer (same clock) with how much of the log it has
        # been checked against (see `earliest_start`).
        self._taken: list[tuple[float, float]] = []
        # How many times processors were taken (reservations, advances) since built:
        # while it stays the same, every answer does (read per candidate: no property).
        self.changes = 0
        self._kept: dict[tuple[int, float], tuple[float, int]] = {}
        # Per job size: the first instant it fits, and `changes` when found (start_floor).
        self._fits: dict[int, tuple[float, int]] = {}

    @classmethod
    def project(cls, state: QueueState, limits_as_runtimes: bool = False) -> QueueProfile:
        """The profile of `state` after an EASY projection of its queue.

        By default jobs run their predicted times; with `limits_as_runtimes` every job
        runs to its limit (the pessimistic profile behind a walltime-based bound).
        """
        projection = Projection(state, limits_as_runtimes)
        busy = projection.busy
        processors = state.processors
        # Where the scheduler has planned a start, its plan places the job (it knows the
        # priorities and reservations the projection does not). The other jobs keep
        # their projected starts, made with this one at its projected time: where plan
        # and projection disagree, the profile is over-full at the plan (new jobs wait
        # longer) and has a hole where the projection had put the job. A plan for a job
        # of the deep queue is not applied: its work is already in `busy`.
        planned = state.planned or (None,) * len(projection.runs)
        for (procs, _, _), run, start, plan in zip(state.queued, projection.runs,
                                                   projection.starts, planned, strict=False):
            if plan is not None:
                start = max(plan, 0.0)
            if start is not None:
                busy.append((start, start + run, min(max(procs, 1), processors)))
        return cls(state.processors, busy)

    def advance(self, seconds: float) -> None:
        """Move now `seconds` later. The profile is then the one its queue projects that
        much later, provided the queue did not change in between (no job started,
        ended or arrived, no running job outlived its predicted end): the projection is
        the same in time relative to its start. Cheap: only the past is blocked."""
        if seconds <= 0:
            return
        past = self._origin
        self._origin += seconds
        self._take(self.processors, past, self._origin)  # nothing starts in the past

    def steps(self) -> list[tuple[float, int]]:
        """(time, free processors from then on) at every change, starting at 0."""
        origin = self._origin
        found = [(t - origin, f) for times, free in zip(self._times, self._free, strict=True)
                 for t, f in zip(times, free, strict=True) if t >= origin]
        if not found or found[0][0] > 0:
            found.insert(0, (0.0, self.free_at(0.0)))
        return found

    def free_at(self, instant: float) -> int:
        """Free processors at `instant` (seconds from now)."""
        instant += self._origin
        b = max(bisect_right(self._firsts, instant) - 1, 0)
        k = max(bisect_right(self._times[b], instant) - 1, 0)
        return self._free[b][k]

    def earliest_start(self, procs: int, runtime: float) -> float:
        """Seconds from now at which a new job of `procs` for `runtime` s can start."""
        if not 0 < procs <= self.processors:
            raise ValueError(f"a job on this site needs 1 to {self.processors} processors")
        kept = self._kept.get((procs, runtime))
        if kept is not None:
            start, checked = kept
            taken = len(self._taken)
            # Nothing taken near the answer since: the walk below would return it again
            # (and leave its entry in `_answers` as it is).
            if checked == taken:
                return start - self._origin
            if self._still(start, start + runtime, checked):
                self._kept[procs, runtime] = (start, taken)
                return start - self._origin
        # Reservations only take processors away, so an earlier answer for this size and
        # a runtime no longer than this one is a lower bound: the walk starts at it.
        known = self._answers.setdefault(procs, ([], []))
        index = bisect_right(known[0], runtime) - 1
        lower = known[1][index] if index >= 0 else self._origin  # never before now
        start = self._walk(max(bisect_right(self._firsts, lower) - 1, 0), procs, runtime)
        index = bisect_left(known[0], runtime)
        if index < len(known[0]) and known[0][index] == runtime:
            known[1][index] = start
        else:
            known[0].insert(index, runtime)
            known[1].insert(index, start)
        self._kept[procs, runtime] = (start, len(self._taken))
        return start - self._origin

    def start_floor(self, procs: int, runtime: float) -> float:
        """A lower bound on `earliest_start(procs, runtime)`, now and after any later
        reservation or advance (they only take processors): the later of the first
        instant with `procs` free (kept per size, walked on from where it was when the
        profile changed) and the last answer for this size and a run time no longer."""
        fit = self._fits.get(procs)
        if fit is None or fit[1] != self.changes:
            fit = self._fits[procs] = (self._first_fit(procs, fit[0] if fit else 0.0),
                                       self.changes)
        floor = fit[0]
        kept = self._kept.get((procs, runtime))
        if kept is not None:
            floor = max(floor, kept[0])
        else:
            known = self._answers.get(procs)
            if known is not None:
                index = bisect_right(known[0], runtime) - 1
                if index >= 0:
                    floor = max(floor, known[1][index])
        return max(floor - self._origin, 0.0)

    def _first_fit(self, procs: int, since: float) -> float:
        """The first breakpoint from `since` on with `procs` free (breakpoints' clock)."""
        for b in range(max(bisect_right(self._firsts, since) - 1, 0), len(self._times)):
            if self._hi[b] >= procs:
                times, free = self._times[b], self._free[b]
                for i in range(bisect_right(times, since) - 1 if times[0] <= since else 0,
                               len(times)):
                    if free[i] >= procs:
                        return max(times[i], since)
        raise ValueError("the profile never frees enough processors")

    def _still(self, start: float, end: float, checked: int) -> bool:
        """Whether no interval taken after the first `checked` comes within a microsecond
        of [start, end) (breakpoints' clock): `_split` merges breakpoints that close."""
        low, high = start - 2 * _SAME, end + 2 * _SAME
        for taken_start, taken_end in self._taken[checked:]:
            if taken_end > low and taken_start < high:
                return False
        return True

    def _walk(self, first_block: int, procs: int, runtime: float) -> float:
        """The earliest start from block `first_block` on (see `earliest_start`)."""
        # One walk over the blocks, following the current run of steps with `procs`
        # free (`run` is its start): a block entirely full or entirely free is one test;
        # a mixed one is read through its summary for this size, once it has one.
        run: float | None = None
        for b in range(first_block, len(self._times)):
            times = self._times[b]
            if self._hi[b] < procs:  # no step fits: the run ends at the block
                if run is not None and times[0] - run >= runtime:
                    return run
                run = None
                continue
            if self._lo[b] >= procs:  # every step fits: the run goes on
                if run is None:
                    run = times[0]
                continue
            summary = self._cache[b].get(procs)
            if summary is None:
                # Unread since the block last changed: read it step by step (the answer
                # may lie inside), keeping its summary for later queries when it does not.
                found, run = self._read_block(b, procs, runtime, run)
                if found:
                    assert run is not None
                    return run
                continue
            first, last, longest = summary
            if run is None and first > 0:
                run = times[0]
            if run is not None and times[first] - run >= runtime:
                return run
            if longest >= runtime:
                return self._inner_run(b, procs, runtime, first, last)
            run = times[last + 1] if last + 1 < len(times) else None
        # The last step frees every processor, so the final run never ends; only
        # reservations beyond capacity (a caller's bug) leave none.
        if run is None:
            raise ValueError("the profile never frees enough processors")
        return run

    def reserve(self, procs: int, start: float, runtime: float) -> None:
        """Take `procs` processors over [start, start + runtime) (a job routed here)."""
        if procs <= 0 or runtime <= 0:
            return
        start = max(start, 0.0) + self._origin
        self._take(procs, start, start + runtime)

    def _take(self, procs: int, start: float, end: float) -> None:
        """Take `procs` processors over [start, end) on the breakpoints' clock."""
        self._taken.append((start, end))
        self.changes += 1
        self._split(end)
        b, k = self._split(start)
        touched = set()
        while b < len(self._times):
            times, free = self._times[b], self._free[b]
            while k < len(times) and times[k] < end:
                free[k] -= procs
                k += 1
            touched.add(b)
            if k < len(times):
                break
            b, k = b + 1, 0
        for t in touched:
            self._lo[t] = min(self._free[t])
            self._hi[t] = max(self._free[t])
            self._cache[t] = {}

    def _read_block(self, b: int, procs: int, runtime: float,
                    run: float | None) -> tuple[bool, float | None]:
        """Follow the run through block `b`: (True, start) when a long enough run is
        found, else (False, the run still open at the block's end) and the block's
        summary for `procs` cached: its first and last step too full for the job and
        the longest run of fitting steps between two of them (-1 when none)."""
        times, free = self._times[b], self._free[b]
        first = last = -1
        longest = -1.0
        for i, level in enumerate(free):
            if level >= procs:
                if run is None:
                    run = times[i]
                continue
            if run is not None and times[i] - run >= runtime:
                return True, run
            run = None
            if first < 0:
                first = i
            elif i > last + 1 and times[i] - times[last + 1] > longest:
                longest = times[i] - times[last + 1]
            last = i
        self._cache[b][procs] = (first, last, longest)
        return False, run

    def _inner_run(self, b: int, procs: int, runtime: float, first: int, last: int) -> float:
        """Start of the first run inside block `b` (between too-full steps) long enough."""
        times, free = self._times[b], self._free[b]
        previous = first
        for i in range(first + 1, last + 1):
            if free[i] < procs:
                if i > previous + 1 and times[i] - times[previous + 1] >= runtime:
                    return times[previous + 1]
                previous = i
        raise AssertionError("the block summary promised a run")

    def _split(self, instant: float) -> tuple[int, int]:
        """Make `instant` a breakpoint; return its (block, index)."""
        b = max(bisect_right(self._firsts, instant) - 1, 0)
        times, free = self._times[b], self._free[b]
        k = bisect_right(times, instant) - 1
        # A breakpoint within a microsecond is this instant: times moved by `advance`
        # round differently, and a sliver between the two would break every run there.
        if instant - times[k] <= _SAME:
            return b, k
        if k + 1 < len(times) and times[k + 1] - instant <= _SAME:
            return b, k + 1
        if k + 1 == len(times) and b + 1 < len(self._times) and \
                self._firsts[b + 1] - instant <= _SAME:
            return b + 1, 0
        times.insert(k + 1, instant)
        free.insert(k + 1, free[k])
        self._cache[b] = {}
        if len(times) > 2 * _BLOCK:
            self._times[b + 1:b + 1] = [times[_BLOCK:]]
            self._free[b + 1:b + 1] = [free[_BLOCK:]]
            del times[_BLOCK:], free[_BLOCK:]
            self._firsts.insert(b + 1, self._times[b + 1][0])
            self._cache.insert(b + 1, {})
            self._lo[b:b + 1] = [min(free), min(self._free[b + 1])]
            self._hi[b:b + 1] = [max(free), max(self._free[b + 1])]
            if k + 1 >= _BLOCK:
                return b + 1, k + 1 - _BLOCK
        return b, k + 1

