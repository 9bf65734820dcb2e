"""Placement: routing (`gateway.scheduling.routing`) fed with the sites as they are now.

The API places a job when it accepts it (so a job no site can run is refused at once,
saying why); the worker's routing step places `site: auto` jobs again while they wait,
when the site they were placed at has stopped accepting jobs."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import SUBMITTED, JobSpec
from gateway.repositories import jobs
from gateway.repositories import sites as site_rows
from gateway.repositories.sites import CLOSED, Admission
from gateway.scheduling.routing import AUTO, Routed, SiteSnapshot, route
from gateway.services.sites import NoAccount, SiteRegistry


def snapshots(registry: SiteRegistry, admission: Mapping[str, Admission],
              username: str | None) -> list[SiteSnapshot]:
    """Every configured site, in configuration order, as this user's job sees it."""
    found = []
    for entry in registry:
        flags = admission.get(entry.name, CLOSED)
        try:
            entry.adapter_for(username)
            problem = None
        except NoAccount as exc:
            problem = exc.detail
        found.append(SiteSnapshot(entry.name, entry.shape, flags.enabled, flags.accepting,
                                  problem))
    return found


def place(session: Session, registry: SiteRegistry, spec: JobSpec,
          username: str | None) -> str:
    """The site a new job goes to; Invalid (422) saying why when there is none."""
    placed = route(spec, snapshots(registry, registry.admission(session), username))
    if isinstance(placed, Routed):
        return placed.site
    raise Invalid(placed.reason, field=placed.field)


def closed_sites(session: Session, registry: SiteRegistry) -> list[str]:
    """Configured sites not accepting jobs now (drained or disabled)."""
    admission = site_rows.admissions(session)
    return [e.name for e in registry if not admission.get(e.name, CLOSED).accepting]


def replace_stranded(session: Session, registry: SiteRegistry, closed: list[str],
                     limit: int) -> int:
    """Place again the waiting (ACCEPTED) `site: auto` jobs at the `closed` sites (an
    administrator drained or disabled them); a job no site takes now keeps waiting where
    it is. Returns how many moved."""
    admission = site_rows.admissions(session)  # fresh: the API's copy may lag
    moved = 0
    # A job whose user chose its site waits there.
    for owned in jobs.lock_accepted(session, closed, limit, site_choice=AUTO):
        job = owned.job
        spec = JobSpec.model_validate(job.spec, context=SUBMITTED)
        placed = route(spec, snapshots(registry, admission, owned.owner))
        if isinstance(placed, Routed) and placed.site != job.site_name:
            job.state_reason = (f"site '{job.site_name}' stopped accepting jobs; placed at "
                                f"site '{placed.site}'")
            job.site_name = placed.site
            job.updated_at = utcnow()
            moved += 1
    session.flush()
    return moved
