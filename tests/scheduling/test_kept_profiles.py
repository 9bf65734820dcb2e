"""The simulator keeps each site's profiles between passes while its queue is unchanged
(advancing them in time): a pure speed-up, so a federation replays job for job as it does
when every pass projects every queue afresh."""

from __future__ import annotations

import random
from collections.abc import Sequence

from gateway.scheduling.evaluation.federation.engine import (
    Federation,
    Record,
    SiteSpec,
    SiteView,
    TraceJob,
    Truth,
)
from gateway.scheduling.evaluation.federation.production_router import Ranked
from gateway.scheduling.routing_inputs import Profiles


class Afresh(Ranked):
    """The router projecting every queue at every pass (nothing kept)."""

    def _keep(self, now: float, sites: Sequence[SiteView]) -> dict[str, Profiles]:
        return {}


class Counting(Ranked):
    """The router as it is, counting the sites whose profiles a pass kept."""

    reused = 0

    def _keep(self, now: float, sites: Sequence[SiteView]) -> dict[str, Profiles]:
        kept = super()._keep(now, sites)
        self.reused += len(kept)
        return kept


def records(seed: int, count: int) -> list[Record]:
    rng = random.Random(seed)
    now = 0.0
    found = []
    for number in range(count):
        now += rng.expovariate(1 / 60.0) if rng.random() < 0.9 else 0.0  # some arrive together
        requested = rng.choice((600.0, 3600.0, 14400.0))
        found.append((TraceJob(rng.randrange(3), number, now, rng.choice((1, 2, 4, 8, 16, 32)),
                               requested, rng.randrange(12), 0, rng.randrange(5)),
                      Truth(rng.uniform(0.05, 1.0) * requested, -1.0)))
    return found


def test_kept_profiles_change_no_decision() -> None:
    sites = [SiteSpec("small", 16), SiteSpec("mid", 32), SiteSpec("big", 64)]
    jobs = records(7, 800)
    kept = Counting()
    fast = Federation(sites, kept).run(jobs)
    slow = Federation(sites, Afresh()).run(jobs)
    assert fast.site == slow.site
    assert fast.start == slow.start
    # The kept profiles were used, not bypassed: passes found sites unchanged.
    assert kept.reused > len(jobs) // 2
