"""The simulator's baseline routing policies (pure).

- `own`: every job stays at the site whose log it comes from (no federation at all);
- `fewest-queued`: the site big enough for the job with the fewest queued jobs, counting
  the jobs routed there earlier in the same instant; a tie keeps the job at its own
  site, else goes to the first site in the order given (the load-balancing rule of
  early metaschedulers, blind to sizes, run times and free processors).
`fastest`, gridgate's own router, is in `production_router.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.scheduling.evaluation.federation.engine import Policy, SiteView, TraceJob, eligible

OWN = "own"
FEWEST_QUEUED = "fewest-queued"


class Own(Policy):
    """Every job runs where it was submitted."""

    name = OWN

    def route(self, now: float, jobs: Sequence[TraceJob], sites: Sequence[SiteView]
              ) -> list[int]:
        """Each job's origin site."""
        return [job.origin for job in jobs]


class FewestQueued(Policy):
    """The fitting site with the shortest queue (by count), ties to the origin."""

    name = FEWEST_QUEUED

    def route(self, now: float, jobs: Sequence[TraceJob], sites: Sequence[SiteView]
              ) -> list[int]:
        """Each job to the shortest fitting queue, counting this instant's earlier jobs."""
        queued = [site.queued_count for site in sites]
        chosen = []
        for job in jobs:
            best = min(eligible(job, sites),
                       key=lambda index: (queued[index], index != job.origin, index))
            queued[best] += 1
            chosen.append(best)
        return chosen
