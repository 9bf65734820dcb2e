"""The event of a refused lien (gateway.schemas.events ALLOCATION_REFUSED_TYPE): a fact
about the allocation that would have paid, read by its project's PIs and by the user
whose job it was. A job refused at submission is not kept, so its route records the
refusal in a transaction of its own after the rollback; the worker records a refusal
in the transaction that re-routes the job."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.units import MILLI
from gateway.repositories.events import facts
from gateway.schemas.events import ALLOCATION_REFUSED_TYPE
from gateway.services.money.bank import Refusal


def record(session: Session, refusal: Refusal, *, owner_id: str, actor: str, at: datetime,
           job_id: str | None = None) -> None:
    """Record the refusal of the job (`job_id` None: refused at submission) of the user
    `owner_id`, asked for by `actor`."""
    payer = refusal.payer
    subject = (f"allocation:{refusal.allocation_id}" if refusal.allocation_id is not None
               else f"project:{payer.project_name}")
    facts.add_all(session, [facts.NewFact(
        ALLOCATION_REFUSED_TYPE, at, actor, subject=subject, project_id=payer.project_id,
        owner_id=owner_id, data={
            "allocation": refusal.allocation_id, "project": payer.project_name,
            "site": refusal.site, "asked_su": refusal.asked_milli / MILLI,
            "available_su": refusal.available_milli / MILLI, "actor": actor,
            "job_name": refusal.job_name, "job_id": job_id})])
