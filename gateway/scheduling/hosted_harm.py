"""How much the jobs routed into a site delay its own users, and when it stops hosting
them (pure).

A job routed away from its home is a guest at its destination. Its own forecast there
can be right (it starts in idle processors, as predicted) and still hurt: while it runs,
the processors it holds are not there for the destination's own users' next jobs. On
KTH+CTC (days 180-360) the router filled KTH's idle time with CTC's jobs, predicted
right on average (5,893 s forecast, 5,728 s waited), and KTH's own jobs kept at home
waited twice as long (4,883 s -> 9,973 s). No guest's forecast shows this; its hosts'
waits do.

So each job of a site's own users (a job whose home it is) routed there is scored, when
routed, by its likely wait and the part of it the guests cause: its likely start on the
site's queue as it is less that on the same queue without the guests
(`SiteForecaster.home_wait`). At once, not when the job starts: the router fills an idle
site with guests in a few passes, and its users' waits would show it only hours later.
The delays are summed over every such job known, as the promise is about the mean: a
site hosts guests only while their total delay of its users stays within `TOLERANCE` of
its users' total wait without them. The tolerance is issue 27's promise (no origin's
mean wait rises by more than 5%), not a figure fitted to a log.
"""

from __future__ import annotations

TOLERANCE = 0.05


class HostedHarm:
    """Per site, its own users' jobs' total wait and total delay caused by guests."""

    def __init__(self, tolerance: float = TOLERANCE) -> None:
        if not tolerance >= 0:  # also refuses NaN
            raise ValueError(f"the tolerance is a share, not {tolerance}")
        self.tolerance = tolerance
        self._totals: dict[str, tuple[float, float]] = {}

    def observe(self, site: str, wait: float, delay: float) -> None:
        """A job of `site`'s own users waits `wait` s there, `delay` s of it caused by
        the guests (clamped to [0, wait])."""
        wait = max(wait, 0.0)
        waited, delayed = self._totals.get(site, (0.0, 0.0))
        self._totals[site] = (waited + wait, delayed + min(max(delay, 0.0), wait))

    def share(self, site: str) -> float:
        """The guests' delay over the wait the site's users would have had without it
        (0 with no delay; inf when they would not have waited at all)."""
        waited, delayed = self._totals.get(site, (0.0, 0.0))
        if delayed == 0:
            return 0.0
        alone = waited - delayed
        return delayed / alone if alone > 0 else float("inf")

    def hosts(self, site: str) -> bool:
        """Whether `site` takes guests now: its users' delay is within tolerance."""
        return self.share(site) <= self.tolerance
