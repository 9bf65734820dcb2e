"""What a job asks to hold at a site while it runs. Pure.

One rule for the three readers that must agree on it: the quote prices it (the lien is
taken from the quote), the charge caps each run's time at its walltime and estimates a
lost usage record with its cores, and the forecast queues its cores for its walltime. A
site adds no default or limit here: a job always carries its walltime (the spec's
default when it gave none), and a site whose limits it exceeds is excluded by routing
(gateway.scheduling.feasibility), never given a clamped job.
"""

from __future__ import annotations

from gateway.accounting.rates import Usage
from gateway.domain.jobspec import Resources


def requested(resources: Resources) -> Usage:
    """All the job's cores (ranks x threads) on its nodes, with its memory over all of
    them (`memory_mb` is per node), for its walltime."""
    r = resources
    return Usage(seconds=r.walltime, cores=r.ranks * r.threads_per_rank, nodes=r.nodes,
                 memory_mb=r.memory_mb * r.nodes if r.memory_mb else None)
