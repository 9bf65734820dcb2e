"""How many parallel SFTP streams a large copy over SSH needs (issue 32, item 3).

One SSH channel carries at most its window per round trip: OpenSSH's session channels
have a 2 MiB window that sshd does not grow, so one stream moves at most 2 MiB / RTT
(26 MB/s at 80 ms, whatever the link). A copy needs enough streams to keep the link's
bandwidth-delay product in flight, twice over (one stream reaches about half its window
bound: one scp moved 48-65% of it over the testbed's links, benchmarks/wan_links.py):
ceil(2 x rate x RTT / window), within [low, high].

Both inputs are measured, neither assumed for a site: the round trip on the site's
pooled connection just before the copy, and the rate the link has shown. A copy that
did not fill the windows it had (it moved less than half of streams x window / RTT) was
held by something else (the link, or either end's CPU): its rate is the link's. One that
filled them says only that the link takes at least that much, so the plan keeps what it
assumed before. Until a copy has shown a rate, the plan assumes UNKNOWN_RATE, more than
one SSH connection's encryption carries on one core, so a first copy is never held back
by too few windows; on a LAN (a fraction of a millisecond) that still asks for one
stream, and `low` (the target's `bulk_streams`, 2) keeps the copy on two cores.
"""

from __future__ import annotations

import math
import threading

# OpenSSH's session channel window (CHAN_SES_WINDOW_DEFAULT: 64 packets of 32 KiB).
CHANNEL_WINDOW = 2 << 20
# A copy that moved less than this share of what its windows allowed was not held by them.
FILLED = 0.5
# Windows in flight per bandwidth-delay product (see the module docstring).
HEADROOM = 2.0
# The rate assumed before any copy has shown one (bytes/s): 10 Gbit/s.
UNKNOWN_RATE = 1.25e9


class StreamPlan:
    """Streams for the next copy to one target, from its measured RTT and rate."""

    def __init__(self, low: int, high: int, *, window: int = CHANNEL_WINDOW) -> None:
        if not 1 <= low <= high:
            raise ValueError(f"streams must satisfy 1 <= low <= high (got {low}, {high})")
        self.low, self.high, self.window = low, high, window
        self._lock = threading.Lock()
        self._rate: float | None = None  # bytes/s the link has shown; None: not yet

    @property
    def rate(self) -> float | None:
        with self._lock:
            return self._rate

    def streams(self, rtt: float | None) -> int:
        """Streams for a copy over a round trip of `rtt` seconds (None: not measured)."""
        if rtt is None or rtt <= 0:
            return self.low
        rate = self.rate or UNKNOWN_RATE
        needed = math.ceil(HEADROOM * rate * rtt / self.window)
        return max(self.low, min(self.high, needed))

    def observe(self, nbytes: int, seconds: float, streams: int, rtt: float | None) -> None:
        """What a copy did: `nbytes` in `seconds` over `streams` streams at `rtt`."""
        if nbytes <= 0 or seconds <= 0 or rtt is None or rtt <= 0:
            return
        moved = nbytes / seconds
        allowed = streams * self.window / rtt
        with self._lock:
            if moved < FILLED * allowed:
                self._rate = moved  # held by the link (or a CPU), not by the windows
            elif self._rate is not None and moved > self._rate:
                self._rate = None  # it took more than we thought: assume more again
