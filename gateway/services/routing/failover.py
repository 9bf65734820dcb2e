"""Failover: a `site: auto` job waiting at a site that has been down too long is also
routed to another site, as a sibling (`gateway.repositories.jobs.targets`).

Nothing is taken from the down site: its attempt may still start there when the site
comes back. Whichever attempt starts first wins and the other is revoked by the usual
hedge rules (gateway.services.lifecycle.hedging; the cancel step reaches the old site
once it answers), so a job never runs to the end twice, and one the site still has is
not lost.
Exactly once across workers: the job row is locked (others skip it) and a job that
already has an open target is not picked.

With the bank on, the other site must be one the job's project can pay at, and the job's
lien is drawn again there (gateway.services.money.budget) in the same unit of work; it may now
start at either site, so the lien covers the dearer of the two.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.domain.jobspec import AUTO
from gateway.repositories import sites as site_rows
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs import targets
from gateway.services.lifecycle.transitions import note
from gateway.services.money import budget
from gateway.services.routing.forecasting import build_forecaster
from gateway.services.routing.placement import decide_elsewhere
from gateway.services.sites.registry import SiteRegistry

DOWN = "down"


def down_since_before(session: Session, cutoff: datetime) -> list[str]:
    """Sites down since before `cutoff`."""
    return [s.name for s in site_rows.all_sites(session)
            if s.state == DOWN and s.state_since is not None and s.state_since <= cutoff]


def fail_over(session: Session, registry: SiteRegistry, now: datetime, after: timedelta,
              limit: int, actor: str, charged: bool = False) -> int:
    """Route elsewhere the jobs stranded at sites down longer than `after`; how many.
    `charged`: the bank is on."""
    rows = site_rows.all_sites(session)
    down = {s.name for s in rows if s.state == DOWN}
    stale = down_since_before(session, now - after)
    if not stale:
        return 0
    moved = 0
    stranded = targets.lock_stranded(session, stale, limit, AUTO)
    books = (budget.open_books(session, {o.job.id: o.job.project_id for o, _ in stranded},
                               now, lock=True) if charged and stranded else None)
    for owned, site in stranded:
        job = owned.job
        spec = jobs.stored_spec(job.spec)
        avoid = {name: "down" for name in down}
        avoid.update((name, "already tried") for name in targets.tried_sites(session, job.id))
        while True:
            decision = decide_elsewhere(session, registry, owned, spec, avoid,
                                        build_forecaster, now, books)
            if not decision.chosen or books is None:
                break
            quoted = {c.site: c.quote_milli or 0 for c in decision.candidates}
            refused = budget.draw(session, books.payers[job.project_id],
                                  budget.Drawn(job.id, job.name, job.owner_id),
                                  decision.chosen[0],
                                  max(quoted[decision.chosen[0]], quoted.get(site, 0)),
                                  now, actor)
            if refused is None:
                break
            avoid[decision.chosen[0]] = refused  # spent since the books were opened
        if not decision.chosen:
            continue  # nowhere else now: it keeps waiting at its site
        other = decision.chosen[0]
        reason = (f"site '{site}' down for over {after.total_seconds():.0f} s before the "
                  f"job started; also routed to site '{other}' (first to start wins)")
        targets.add(session, job.id, [other], reason, now)
        note(session, job, reason, actor=actor, at=now)
        moved += 1
    session.flush()
    return moved
