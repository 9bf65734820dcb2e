"""The deep part of a queue, behind the jobs projected one by one, as the work it carries (pure).

An EASY projection (`easy.project_runs`) rescans the queue at every completion it
plays, so its cost grows with the square of the queue: a site with thousands of waiting
jobs would cost seconds per routing pass, and a walk of a long log with deep queues
(`--evaluate-predictions`) hours. So a queue's first `EXACT` jobs are projected job by
job, and the jobs behind them are taken as their work (processors x run time): in queue
order, from the instant the last of the first `EXACT` starts (FCFS: they are behind it;
the holes before it stay free for backfilling), they take every processor left free
(a fluid approximation: a queue that deep keeps the machine full until its work has
drained). Each starts when the work ahead of it in that tail has been taken. A queue of
at most `EXACT` jobs is projected exactly as before, and a longer one costs the engine
no more than `EXACT` jobs do, plus a sum over the rest.

`EXACT` is a cost bound, not a fitted figure: a site's profile of 128 queued jobs builds
in about a millisecond on this project's 2-core machine (1,000 jobs: 1.6 ms, 5,000:
3.8 ms, where projecting them all took 0.02 and 0.4 s;
`benchmarks/prediction_walk_speed.py` reports the walk's cost per job by queue length).
The shared logs' queues are shorter most of the time (means 17 to 116 jobs).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

EXACT = 128

Busy = tuple[float, float, int]  # (start, end, processors), seconds from now


def free_steps(processors: int, busy: Iterable[Busy]) -> tuple[list[float], list[int]]:
    """The free processors of `processors` with `busy` taken: (times, free from each time
    on), from 0, one entry per change (a start before now counts from now)."""
    deltas: defaultdict[float, int] = defaultdict(int)
    deltas[0.0] = 0
    for start, end, procs in busy:
        if start < 0.0:
            start = 0.0
        if end <= start or procs <= 0:
            continue
        deltas[start] -= procs
        deltas[end] += procs
    times: list[float] = []
    free: list[int] = []
    level = processors
    for instant, delta in sorted(deltas.items()):
        level += delta
        if free and free[-1] == level:
            continue  # no change: no breakpoint
        times.append(instant)
        free.append(level)
    return times, free


def absorb(processors: int, busy: Sequence[Busy], work: Sequence[float], after: float = 0.0
           ) -> tuple[list[float], list[Busy]]:
    """The tail of a queue (`work`: processor-seconds of each job, in queue order) taking
    what `busy` leaves free of `processors` in time order from `after` on: (each job's
    start, the intervals the tail's work takes)."""
    times, free = free_steps(processors, [*busy, (0.0, after, processors)])
    ahead = 0.0  # work of the tail before the next job's
    total = math.fsum(work)
    taken = 0.0  # work taken by the steps walked so far
    starts: list[float] = []
    intervals: list[Busy] = []
    waiting = iter(work)
    next_work = next(waiting, None)
    for k, at in enumerate(times):
        level = max(free[k], 0)
        if level == 0:
            continue
        until = times[k + 1] if k + 1 < len(times) else math.inf
        capacity = level * (until - at)
        # Every job whose work ahead is taken within this step starts in it.
        while next_work is not None and ahead < taken + capacity:
            starts.append(at + (ahead - taken) / level)
            ahead += next_work
            next_work = next(waiting, None)
        if total <= taken + capacity:
            if total > taken:
                intervals.append((at, at + (total - taken) / level, level))
            break
        intervals.append((at, until, level))
        taken += capacity
    # Rounding may leave a job whose work ahead is all the tail's: it starts at the end.
    end = intervals[-1][1] if intervals else 0.0
    starts.extend(end for _ in range(len(work) - len(starts)))
    return starts, intervals
