"""An account's own queue at a site: when its next job can start if the scheduler keeps
running no more of the account's jobs at once than it runs now (pure).

Schedulers cap what one account runs at once (Slurm's `MaxJobsPerUser`, Maui's
`MAXJOB`, Grid Engine's `maxujobs`, LSF's `MAX_JOBS` per user), and the EASY projection
of the queue knows nothing of such caps: it starts an account's waiting jobs as soon as
processors are free. On HPC2N one user's bursts of hundreds of 2-processor jobs ran 8 or
9 at a time while processors stood free; their 95% bounds, learnt from jobs the queue
projected alike, were missed by a median factor of 3.5, and the class of 2-3 processors
x 1,024-2,047 minutes was covered 78.8% of the time.

The evidence of such a hold is in the queue itself: an account has jobs running and jobs
waiting that would fit in the processors free now. Its next job then waits for the jobs
of its own ahead of it to go through as many slots as the account holds now, each job
running to its limit (the bound's assumption, as in the walltime profile). Without that
evidence the account's queue says nothing (0): its jobs wait, if at all, for processors,
which the profiles already count. `SiteForecaster` floors a job's 95% bound by this start
(docs/design/predictors.md has the measurement), never its median.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from operator import itemgetter

from gateway.scheduling.queues.queue_state import QueueState

_PROCS = itemgetter(0)


class AccountQueue:
    """One account's running and waiting jobs at a site, as slots of its own."""

    __slots__ = ("_held", "_slots")

    def __init__(self, running_left: Iterable[float], waiting: Iterable[tuple[int, float]],
                 free: int) -> None:
        """`running_left`: what is left of each running job's limit (seconds); `waiting`:
        each waiting job's (processors, limit) in queue order; `free`: the site's
        processors not held by running jobs."""
        waiting = list(waiting)
        # Held: some job of the account waits although it would fit now. An account that
        # is not held never is (`add` does not change it), so its slots are not kept.
        held = any(procs <= free for procs, _ in waiting)
        self._slots = [max(left, 0.0) for left in running_left] if held else []
        self._held = bool(self._slots)
        heapq.heapify(self._slots)
        for _, limit in waiting:
            self.add(limit)

    def add(self, limit: float) -> None:
        """A job of the account with this limit joins its queue (a routing pass's commit)."""
        if self._slots:  # none when not held
            heapq.heapreplace(self._slots, self._slots[0] + limit)

    def start(self) -> float:
        """When a job joining the queue now starts under the hold (0 without evidence)."""
        return self._slots[0] if self._held else 0.0


class AccountQueues(Mapping[str, AccountQueue]):
    """Every account's queue at a site (the accounts that run jobs there), each built
    when first read: a forecast reads its job's account only, and a walk's snapshot at
    every submit holds dozens of accounts."""

    def __init__(self, queue: QueueState) -> None:
        """The accounts of `queue.owners` (none when it names none); a job of an unknown
        account (None) counts only as processors."""
        running = queue.running
        self._free = queue.processors - sum(map(_PROCS, running))
        self._left: dict[str, list[float]] = {}
        self._queued: dict[str, list[tuple[int, float]]] = {}
        self._built: dict[str, AccountQueue] = {}
        owners = queue.owners  # empty when the scheduler names none: then no account
        left = self._left
        for (_, _, remaining), account in zip(running, owners, strict=False):
            if account is not None:
                left.setdefault(account, []).append(remaining)
        queued = self._queued
        waiting = islice(owners, len(running), None)
        for (procs, _, limit), account in zip(queue.queued, waiting, strict=False):
            if account in left:  # no slot held: nothing to drain (None never is)
                queued.setdefault(account, []).append((procs, limit))

    def __getitem__(self, account: str) -> AccountQueue:
        built = self._built.get(account)
        if built is None:
            built = self._built[account] = AccountQueue(
                self._left[account], self._queued.get(account, ()), self._free)
        return built

    def __iter__(self) -> Iterator[str]:
        return iter(self._left)

    def __len__(self) -> int:
        return len(self._left)
