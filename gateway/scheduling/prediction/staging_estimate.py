"""Staging time: how long moving a job's data to a candidate site takes (pure).

Each input is named by its source as the job spec gives it (`upload:<id>`,
`site://NAME/PATH`, `https://...`) with its size. Its data comes from an origin: the
gateway (`upload`) for uploads, site NAME for `site://NAME/...`, the web (`https`).
Moving it to a site costs bytes / rate, the rate of that (origin, site) path being the
gateway's exponentially weighted average of the transfers it has observed there, or the
site configuration's default before any. Inputs already at the site (in its cache, or a
`site://` input of that very site) cost nothing; the job's expected outputs come back to
the gateway over the reverse path.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

GATEWAY = "upload"  # the origin of data the gateway holds (uploads, results)
WEB = "https"  # the origin of https:// inputs
# Weight of the newest transfer in the average: a path's rate follows a change within a
# few transfers (half-life log(0.5)/log(0.75) = 2.4 transfers) yet one slow copy, a
# congested minute, moves it by only a quarter.
EWMA_WEIGHT = 0.25


@dataclass(slots=True)
class TransferRates:
    """Bytes per second per (origin, destination) path: measured, else the site default."""

    defaults: Mapping[str, float] = field(default_factory=dict)  # site -> rate from config
    fallback: float = 10e6  # a site with no configured rate: 10 MB/s, a modest WAN link
    measured: dict[tuple[str, str], float] = field(default_factory=dict)

    def observe(self, origin: str, destination: str, size: int, seconds: float) -> None:
        """Fold one completed transfer of `size` bytes in `seconds` into the path's rate."""
        if size <= 0 or seconds <= 0:
            return  # nothing measurable (empty file, clock granularity)
        rate = size / seconds
        path = (origin, destination)
        old = self.measured.get(path)
        self.measured[path] = rate if old is None else old + EWMA_WEIGHT * (rate - old)

    def rate(self, origin: str, destination: str) -> float:
        """Bytes per second from `origin` to `destination`."""
        measured = self.measured.get((origin, destination))
        if measured is not None:
            return measured
        # A path touching a site defaults to that site's configured rate (the gateway's
        # own link is rarely the bottleneck); between two sites, the slower of the two.
        known = [self.defaults[s] for s in (origin, destination) if s in self.defaults]
        return min(known) if known else self.fallback


def origin_of(source: str) -> str:
    """Where a spec's input source lives: a site's name, the web, or the gateway."""
    if source.startswith("site://"):
        return source.removeprefix("site://").partition("/")[0]
    return WEB if source.startswith("https://") else GATEWAY


def staging_seconds(
    site: str,
    inputs: Mapping[str, int],
    rates: TransferRates,
    cached: Collection[str] = (),
    output_bytes: int = 0,
) -> float:
    """Seconds to bring `inputs` (source -> bytes) to `site` and `output_bytes` back.

    `cached` names the sources whose data the site already holds.
    """
    total = 0.0
    for source, size in inputs.items():
        origin = origin_of(source)
        if size <= 0 or origin == site or source in cached:
            continue
        total += size / rates.rate(origin, site)
    if output_bytes > 0:
        total += output_bytes / rates.rate(site, GATEWAY)
    return total
