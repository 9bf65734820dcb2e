"""Each site's live load, recorded from a routing pass's queue snapshots for `gridgate
sites` (GET /api/v1/sites): its queued and running jobs and free cores as the snapshot
listed them, and the predicted wait of a probe job, one node for one hour.

The probe's wait comes from the pass's own forecaster (gateway.services.routing.forecasting), read
before any job of the pass is committed to it: the wait a new job would see at the moment
of the snapshot, by the same rules that route jobs. `LoadProbe` wraps the pass's
forecaster factory for that, so the histories are read once per pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from adapters.snapshot import QueueSnapshot
from gateway.repositories import sites as site_rows
from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed
from gateway.schemas.sites import ProbeOut, SiteLoadOut
from gateway.services.routing.forecasting import PassForecaster
from gateway.services.routing.placement import Pending
from gateway.services.routing.site_snapshots import SiteSnapshot
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry

PROBE_NODES = 1
PROBE_SECONDS = 3600

PassFactory = Callable[[Session, SiteRegistry, Sequence[Pending], datetime], PassForecaster]


@dataclass(frozen=True)
class SiteLoad:
    """One site's load at `taken_at`: the document stored in its row's `load`."""

    site: str
    taken_at: datetime
    summary: Mapping[str, Any]


def probe_need(entry: SiteEntry) -> JobNeed:
    """The probe job at `entry`: all cores of one node, a one-hour limit, no inputs."""
    return JobNeed(user="", fingerprint="probe",
                   procs=PROBE_NODES * entry.shape.cores_per_node,
                   time_limit=float(PROBE_SECONDS))


def _seconds(value: float) -> float | None:
    # A site too small for the probe has no finite wait: JSON says null.
    return value if math.isfinite(value) else None


def summary(queue: QueueSnapshot, probe: Forecast) -> dict[str, Any]:
    """The stored load: counts and cores from the snapshot, the probe's forecast wait."""
    return {
        "queued_jobs": len(queue.pending), "running_jobs": len(queue.running),
        "free_cores": queue.free_cores, "total_cores": queue.total_cores,
        "probe": {"nodes": PROBE_NODES, "walltime": PROBE_SECONDS,
                  "wait_median": _seconds(probe.wait_median),
                  "wait_bound": _seconds(probe.wait_bound), "basis": probe.basis},
    }


class LoadProbe:
    """A pass's forecaster factory that also forecasts the probe job at every site that
    answered, from the first forecaster it builds, before the pass commits any job."""

    def __init__(self, make: PassFactory, snapshots: Mapping[str, SiteSnapshot]) -> None:
        self._make = make
        self._snapshots = snapshots
        self._waits: dict[str, Forecast] | None = None

    def __call__(self, session: Session, registry: SiteRegistry, jobs: Sequence[Pending],
                 now: datetime) -> PassForecaster:
        """Build the pass's forecaster (a `placement.ForecasterFactory`)."""
        built = self._make(session, registry, jobs, now)
        if self._waits is None:
            self._waits = self._probe(built.inner, registry)
        return built

    def _probe(self, forecaster: SiteForecaster, registry: SiteRegistry
               ) -> dict[str, Forecast]:
        return {snap.name: forecaster.forecast(probe_need(registry.get(snap.name)), snap.name)
                for snap in self._snapshots.values() if snap.reached}

    def loads(self, session: Session, registry: SiteRegistry, now: datetime
              ) -> list[SiteLoad]:
        """The load of each site that answered (building a forecaster if the pass routed
        nothing and so built none)."""
        if self._waits is None:
            self(session, registry, (), now)
        waits = self._waits or {}
        return [SiteLoad(snap.name, snap.queue.taken_at, summary(snap.queue, waits[snap.name]))
                for snap in self._snapshots.values() if snap.queue is not None]


def load_out(stored: Mapping[str, Any] | None, taken_at: datetime | None
             ) -> SiteLoadOut | None:
    """The API's `load` of a site from its row (null until a snapshot was recorded)."""
    if stored is None or taken_at is None:
        return None
    probe = stored["probe"]
    return SiteLoadOut(
        taken_at=taken_at, queued_jobs=stored["queued_jobs"],
        running_jobs=stored["running_jobs"], free_cores=stored["free_cores"],
        total_cores=stored["total_cores"],
        probe=ProbeOut(nodes=probe["nodes"], walltime=probe["walltime"],
                       wait_median=probe["wait_median"], wait_bound=probe["wait_bound"],
                       basis=probe["basis"]))


def record_loads(session: Session, loads: Sequence[SiteLoad]) -> None:
    """Store each site's load (a newer one already stored wins)."""
    # By name: concurrent workers lock the site rows in one order, never in a cycle.
    for load in sorted(loads, key=lambda item: item.site):
        site_rows.record_load(session, load.site, load.summary, load.taken_at)
