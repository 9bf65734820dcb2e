"""How each site's wait forecasts turned out for the jobs the router sent there (pure).

A forecast that proves optimistic at a site pulls jobs there until their waits show it;
a router has to notice at once, not after its histories catch up. Per site, the last
`window` jobs routed there give the log-ratio of each realised wait to the median wait
forecast for it, log((1 + wait) / (1 + median)); the median of those ratios is the
site's calibration factor, by which routing scales the next median waits there (never
below 1: the factor only backs routing off, the histories speed it up). The window is
QBETS's minimum history for a 95% bound at 95% confidence (59 jobs): enough for a
median, short enough to follow the load the router itself sends. Medians are scored
before the factor, so factors do not compound.
"""

from __future__ import annotations

import math
import statistics
from collections import deque

from gateway.scheduling.prediction.binomial import minimum_history

WINDOW = minimum_history(0.95, 0.95)


class RoutedOutcomes:
    """Per site, the last `window` (forecast median, realised wait) log-ratios."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError("the window holds at least one outcome")
        self.window = window
        self._ratios: dict[str, deque[float]] = {}

    def observe(self, site: str, median: float, wait: float) -> None:
        """A job routed to `site` with this (uncalibrated) median wait waited `wait` s."""
        ratios = self._ratios.setdefault(site, deque(maxlen=self.window))
        ratios.append(math.log1p(max(wait, 0.0)) - math.log1p(max(median, 0.0)))

    def factor(self, site: str) -> float:
        """The factor on 1 + median wait at `site` (1 until half a window is known)."""
        ratios = self._ratios.get(site)
        if ratios is None or 2 * len(ratios) < self.window:
            return 1.0
        return max(1.0, math.exp(statistics.median(ratios)))

    def outcomes(self, site: str) -> int:
        """Outcomes the site's factor rests on."""
        return len(self._ratios.get(site, ()))
