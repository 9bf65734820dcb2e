"""Budgets for routing: what a job would cost at each site, whether its project can pay
there now, and the lien drawn again for the site routing chose. Services flush; the
caller commits.

With the bank on (Settings.allocations_enforced), a routing pass reads the allocations
of its jobs' projects once, rows locked in id order for the whole pass (every lien the
pass draws then finds its rows already held: two workers' passes never lock them in
opposite orders), and each job's liens. A site where the project's allocations cannot
cover the job's quote is excluded for the pass (a passing reason: balances change), the
job's own lien counting as spendable for itself, since drawing again releases it first.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.units import su
from gateway.db.bank_models import FEDERATION_POOL, Allocation, RateCard
from gateway.db.engine import savepoint
from gateway.domain.jobspec import JobSpec
from gateway.repositories.identity import projects
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.money import liens
from gateway.services.money import bank, ledger, quotes, refusals
from gateway.services.money.bank import InsufficientFunds, Payer


def priced(session: Session, spec: JobSpec, sites: Collection[str],
           cards: Mapping[str, RateCard]) -> dict[str, int]:
    """The job's quote (milli-SU) at each of `sites` that has a rate card (`cards`: the
    registry's, so a routing pass reads none per job)."""
    return {q.site: q.amount_milli for q in quotes.quote(session, spec, list(sites), cards)}


@dataclass(frozen=True)
class Books:
    """The money of a routing pass's jobs: each project's allocations that can pay
    somewhere now, and what each job already holds on each allocation."""

    payers: Mapping[int, Payer]
    allocations: Mapping[int, Sequence[Allocation]]
    held: Mapping[str, Mapping[int, int]]

    def unpayable(self, job_id: str, project_id: int, quoted: Mapping[str, int],
                  sites: Sequence[str]) -> dict[str, str]:
        """Site -> why the project cannot pay for the job there now, for each such site."""
        payer = self.payers[project_id]
        own = self.held.get(job_id, {})
        found = {}
        for site in sites:
            amount = quoted.get(site)
            if amount is None:
                found[site] = (f"site '{site}' has no rate card, so project "
                               f"'{payer.project_name}' cannot be charged there")
                continue
            # After the release that drawing again starts with (bank.rehold).
            available = sum(max(0, a.available_milli + own.get(a.id, 0) + a.credit_limit_milli)
                            for a in self.allocations.get(project_id, ())
                            if a.pool in (site, FEDERATION_POOL))
            if available < amount:
                found[site] = shortfall(payer, site, su(available), amount)
        return found


def shortfall(payer: Payer, site: str, available_su: str, amount_milli: int) -> str:
    """Why the project cannot pay `amount_milli` at `site`, where it has `available_su`."""
    return (f"project '{payer.project_name}' has {available_su} SU available at "
            f"'{site}'; this job would cost {su(amount_milli)} SU")


def open_books(session: Session, job_projects: Mapping[str, int], now: datetime,
               lock: bool) -> Books:
    """The books of these jobs (job id -> project id). `lock`: the allocations' rows
    are locked until the caller's unit of work ends (a routing pass that draws liens)."""
    project_ids = sorted(set(job_projects.values()))
    payers = {pid: Payer(pid, name) for pid, name in projects.names(session,
                                                                     project_ids).items()}
    held = liens.held_by_job(session, list(job_projects))
    payable = {pid: bank.payable(session, pid, None, now) for pid in project_ids}
    if lock:
        ids = [a.id for found in payable.values() for a in found]
        ids += [allocation for own in held.values() for allocation in own]
        fresh = {a.id: a for a in ledger.lock(session, ids)}
        payable = {pid: [fresh[a.id] for a in found if fresh[a.id].status == "active"]
                   for pid, found in payable.items()}
    return Books(payers, payable, held)


def payer_of(session: Session, user_id: str, project: str | None) -> Payer | None:
    """Who would pay for a user's job naming `project` (None: their personal project),
    or None when they cannot charge it (submitting would say why)."""
    conn = session.connection()
    ref = (jobs.personal_project(conn, user_id) if project is None
           else jobs.member_project(conn, user_id, project))
    return None if ref is None else Payer(ref.id, ref.name)


@dataclass(frozen=True)
class Drawn:
    """The job whose lien is drawn again: its id, name and owner (for a refusal's event)."""

    id: str
    name: str | None
    owner_id: str


def draw(session: Session, payer: Payer, job: Drawn, site: str, amount_milli: int,
         now: datetime, actor: str) -> str | None:
    """Draw the job's lien again for `site` (bank.rehold) in a savepoint of the caller's
    unit of work: None when it is held; else nothing changed but the refusal's event,
    and why the project cannot pay there now (another job's lien may have spent it
    since the books were opened)."""
    try:
        with savepoint(session):
            bank.rehold(session, job.id, payer, site, amount_milli, now, actor)
    except InsufficientFunds as exc:
        if exc.refusal is not None:
            refusals.record(session, replace(exc.refusal, job_name=job.name),
                            owner_id=job.owner_id, actor=actor, at=now, job_id=job.id)
        return shortfall(payer, site, str(exc.extra.get("available_su", su(0))), amount_milli)
    return None
