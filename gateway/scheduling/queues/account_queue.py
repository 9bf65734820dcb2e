"""An account's own queue at a site: when its next job can start if the scheduler keeps
running no more of the account's jobs at once than it runs now (pure).

Schedulers cap what one account runs at once (Slurm's `MaxJobsPerUser`, Maui's
`MAXJOB`, Grid Engine's `maxujobs`, LSF's `MAX_JOBS` per user), and the EASY projection
of the queue knows nothing of such caps: it starts an account's waiting jobs as soon as
processors are free. On HPC2N one user's bursts of hundreds of 2-processor jobs ran 8 or
9 at a time while processors stood free; their 95% bounds, learnt from jobs the queue
projected alike, were missed by a median factor of 3.5, and the class of 2-3 processors
x 1,024-2,047 minutes was covered 78.8% of the time.

The evidence of such a hold is in the queue itself: an account has jobs running and a
job waiting that EASY would start now: it fits in the processors free now and, behind
the queue's head, ends (at its limit) before the head's reservation or fits in the
processors the head leaves spare. A job that merely fits is no evidence: EASY keeps it
waiting if it would delay the head, and where limits are long beside the runs (a log
without requests, where each limit is the longest run known) that was taken for a cap
on 14% of KTH's forecasts, their bounds raised to a median of 5 days. Its next job then
waits for the jobs
of its own ahead of it to go through as many slots as the account holds now, each job
running to its limit (the bound's assumption, as in the walltime profile). Without that
evidence the account's queue says nothing (0): its jobs wait, if at all, for processors,
which the profiles already count. `SiteForecaster` floors a job's 95% bound by this start
(docs/design/predictors.md has the measurement), never its median.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable


class AccountQueue:
    """One account's running and waiting jobs at a site, as slots of its own."""

    __slots__ = ("_held", "_slots")

    def __init__(self, running_left: Iterable[float], waiting: Iterable[float],
                 held: bool) -> None:
        """`running_left`: what is left of each running job's limit (seconds); `waiting`:
        each waiting job's limit in queue order; `held`: some of them waits although EASY
        would start it now (`Backfill`)."""
        self._slots = [max(left, 0.0) for left in running_left]
        self._held = bool(self._slots) and held
        heapq.heapify(self._slots)
        for limit in waiting:
            self.add(limit)

    def add(self, limit: float) -> None:
        """A job of the account with this limit joins its queue (a routing pass's commit)."""
        if self._slots:
            heapq.heapreplace(self._slots, self._slots[0] + limit)

    def start(self) -> float:
        """When a job joining the queue now starts under the hold (0 without evidence)."""
        return self._slots[0] if self._held else 0.0


class Backfill:
    """Whether EASY would start a waiting job now: the queue's head if it fits in the
    processors free (`head_starts`); a job behind it if it fits in those the head leaves
    free and ends, at its limit, before the head's reservation (the shadow time, running
    jobs ending at their limits) or fits in the processors the head leaves spare then."""

    __slots__ = ("_extra", "_free", "_shadow", "head_starts")

    def __init__(self, processors: int, running_left: Iterable[tuple[int, float]],
                 head: int) -> None:
        """`running_left`: each running job's (processors, limit left); `head`: the
        processors of the first waiting job."""
        running = list(running_left)
        free = processors - sum(procs for procs, _ in running)
        self.head_starts = head <= free
        self._shadow, self._extra, self._free = math.inf, 0, free
        if self.head_starts:
            self._free = free - head
            return
        for end, procs in sorted((max(left, 0.0), procs) for procs, left in running):
            if free >= head and end > self._shadow:
                break  # every job ending at the shadow time counted
            free += procs
            if free >= head:
                self._shadow, self._extra = end, free - head

    def __call__(self, procs: int, limit: float) -> bool:
        """Whether a job of `procs` processors and this limit behind the head starts now."""
        return procs <= self._free and (limit <= self._shadow or procs <= self._extra)


def account_queues(processors: int, running: Iterable[tuple[int, float, str | None]],
                   waiting: Iterable[tuple[int, float, str | None]]
                   ) -> dict[str, AccountQueue]:
    """Every account's queue at a site: `running` holds (processors, limit left,
    account), `waiting` (processors, limit, account) in queue order; jobs of an unknown
    account (None) count only as processors."""
    running = list(running)
    left: dict[str, list[float]] = {}
    queued: dict[str, list[float]] = {}
    held: set[str] = set()
    for _, remaining, account in running:
        if account is not None:
            left.setdefault(account, []).append(remaining)
    startable: Backfill | None = None
    for procs, limit, account in waiting:
        if startable is None:
            startable = Backfill(processors, ((p, rest) for p, rest, _ in running), procs)
            now = startable.head_starts
        else:
            now = startable(procs, limit)
        if account is not None and account in left:  # no slot held: nothing to drain
            queued.setdefault(account, []).append(limit)
            if now:
                held.add(account)
    return {account: AccountQueue(slots, queued.get(account, ()), account in held)
            for account, slots in left.items()}
