"""The submission's lien in one round trip, on PostgreSQL.

At submit, every gateway thread of a busy project updates the same allocation row, and
the row stays locked until the submission commits; so the work done under that lock is
what bounds a project's submissions per second, and each round trip is a good part of a
submission's cost. One statement finds the project to charge (the same queries as
gateway.repositories.jobs), stores the quotes, draws, holds the lien and writes its two
ledger legs, before the job row is written (their foreign keys to jobs are checked at
commit: migration 0011). The allocation is updated as its last step but one, with its
balance checked again on the row's newest version (PostgreSQL re-evaluates an UPDATE's
condition after waiting for a concurrent one), so nothing is ever overspent. It draws
only when the earliest-ending allocation that can pay at the site covers the whole
amount, exactly what `gateway.services.bank.hold` would do then; any other case (a split
across allocations, a balance spent meanwhile) holds nothing and the caller takes
bank.hold's locked path. The allocation's running sums are updated here with the legs,
as gateway.services.ledger does, and the transaction is chained into the audit trail as
ledger.post chains it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import TextClause

from gateway.repositories import audit

# Where the project comes from: named by id, the user's personal one, or one the user
# is a member of, by name (the queries of gateway.repositories.jobs).
_PROJECT = {
    "id": "SELECT id, name FROM projects WHERE id = :project_id",
    "personal": "SELECT id, name FROM projects WHERE personal_owner_id = :user_id",
    "member": ("SELECT p.id, p.name FROM projects AS p JOIN memberships AS m "
               "ON m.project_id = p.id WHERE p.name = :project_name AND m.user_id = :user_id"),
}


@cache
def _statement(project: str) -> TextClause:
    # Data-modifying CTEs run once, to completion, whether or not the last SELECT reads
    # them; every value is a bind parameter (only a fixed _PROJECT query is formatted in).
    return text(f"""
WITH p AS ({_PROJECT[project]}), q AS (
  INSERT INTO quotes (job_id, site_name, rate_card_id, amount_milli, quoted_at)
  SELECT :job_id, s, c, a, :now
  FROM p CROSS JOIN unnest(CAST(:q_sites AS varchar[]), CAST(:q_cards AS integer[]),
                           CAST(:q_amounts AS bigint[])) AS t(s, c, a)
), chosen AS (
  SELECT a.id FROM allocations AS a JOIN p ON a.project_id = p.id
  WHERE a.status = 'active' AND a.starts_at <= :now
    AND a.ends_at > :now AND a.pool IN (:site, '*')
    AND a.available_milli + a.credit_limit_milli > 0
  ORDER BY a.ends_at, a.id LIMIT 1
), drawn AS (
  UPDATE allocations AS a
  SET available_milli = a.available_milli - :amount, held_milli = a.held_milli + :amount
  FROM chosen
  WHERE a.id = chosen.id AND a.status = 'active'
    AND a.available_milli + a.credit_limit_milli >= :amount
  RETURNING a.id
), lien AS (
  INSERT INTO liens (job_id, allocation_id, site_name, amount_milli, status, created_at)
  SELECT :job_id, drawn.id, :site, :amount, 'held', :now FROM drawn
  RETURNING id, allocation_id
), legs AS (
  INSERT INTO ledger_entries (txn, at, allocation_id, account, amount_milli, kind, job_id,
                              lien_id, reason, actor)
  SELECT :txn, :now, lien.allocation_id, leg.account, leg.amount, 'lien', :job_id, lien.id,
         :reason, :actor
  FROM lien CROSS JOIN (VALUES ('available', -CAST(:amount AS bigint)),
                               ('held', CAST(:amount AS bigint))) AS leg(account, amount)
  RETURNING lien_id, allocation_id
)
SELECT p.id, p.name, (SELECT lien_id FROM legs LIMIT 1) AS lien_id,
       (SELECT allocation_id FROM legs LIMIT 1) AS allocation_id
FROM p
""")  # noqa: S608


@dataclass(frozen=True)
class Held:
    """What the statement found: the project, and the lien if it was taken."""

    project_id: int
    project_name: str
    lien: LienTaken | None


@dataclass(frozen=True)
class LienTaken:
    """A lien the statement took, as its audit link tells it."""

    job_id: str
    lien_id: int
    allocation_id: int
    amount_milli: int
    txn: str
    reason: str
    at: datetime
    actor: str


def quote_and_hold(session: Session, job_id: str, user_id: str, project: int | str | None,
                   quotes: Sequence[tuple[str, int, int]], site: str, amount_milli: int,
                   now: datetime, actor: str) -> Held | None:
    """Find the project to charge (`project`: its id; a name the user must be a member
    of; None, the user's personal project), store the job's quotes (site, rate card id,
    amount) and, if one allocation can pay the whole `amount_milli` at `site`, hold it.
    None (nothing written) when there is no such project. The lien's audit link is the
    caller's to append (`chain`), after the job's own first link."""
    txn, reason = str(uuid.uuid4()), f"held for job {job_id}"
    source = "id" if isinstance(project, int) else "personal" if project is None else "member"
    params: dict[str, Any] = {
        "job_id": job_id, "now": now, "user_id": user_id, "site": site,
        "project_id": project if isinstance(project, int) else None,
        "project_name": project if isinstance(project, str) else None,
        "amount": amount_milli, "txn": txn, "actor": actor, "reason": reason,
        "q_sites": [q[0] for q in quotes], "q_cards": [q[1] for q in quotes],
        "q_amounts": [q[2] for q in quotes]}
    row = session.connection().execute(_statement(source), params).first()
    if row is None:
        return None
    lien = None if row.lien_id is None else LienTaken(
        job_id, row.lien_id, row.allocation_id, amount_milli, txn, reason, now, actor)
    return Held(row.id, row.name, lien)


def chain(session: Session, lien: LienTaken) -> None:
    """Append the lien's ledger transaction to the audit chain, as ledger.post does."""
    audit.posting(session, "lien", lien.actor, lien.at, lien.txn, lien.reason, lien.job_id,
                  lien.lien_id, None, [(lien.allocation_id, "available", -lien.amount_milli),
                                       (lien.allocation_id, "held", lien.amount_milli)])
