"""The submission's lien in one round trip, on PostgreSQL.

At submit, every gateway thread of a busy project updates the same allocation row, and
the row stays locked until the submission commits; so the work done under that lock is
what bounds a project's submissions per second. This statement does the quotes, the
draw, the lien and its two ledger legs at once: the allocation is updated as its last
step but one, with its balance checked again on the row's newest version (PostgreSQL
re-evaluates an UPDATE's condition after waiting for a concurrent one), so nothing is
ever overspent. It draws only when the earliest-ending allocation that can pay at the
site covers the whole amount, exactly what `gateway.services.bank.hold` would do then;
any other case (a split across allocations, a balance spent meanwhile) returns False and
the caller takes bank.hold's locked path. The allocation's running sums are updated here
with the legs, as gateway.services.ledger does, and the transaction is chained into the
audit trail as ledger.post chains it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.orm import Session

from gateway.repositories import audit

_HOLD = text("""
WITH q AS (
  INSERT INTO quotes (job_id, site_name, rate_card_id, amount_milli, quoted_at)
  SELECT :job_id, s, c, a, :now
  FROM unnest(CAST(:q_sites AS varchar[]), CAST(:q_cards AS integer[]),
              CAST(:q_amounts AS bigint[])) AS t(s, c, a)
), chosen AS (
  SELECT id FROM allocations
  WHERE project_id = :project_id AND status = 'active' AND starts_at <= :now
    AND ends_at > :now AND pool IN (:site, '*')
    AND available_milli + credit_limit_milli > 0
  ORDER BY ends_at, id LIMIT 1
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
)
INSERT INTO ledger_entries (txn, at, allocation_id, account, amount_milli, kind, job_id,
                            lien_id, reason, actor)
SELECT :txn, :now, lien.allocation_id, leg.account, leg.amount, 'lien', :job_id, lien.id,
       :reason, :actor
FROM lien CROSS JOIN (VALUES ('available', -CAST(:amount AS bigint)),
                             ('held', CAST(:amount AS bigint))) AS leg(account, amount)
RETURNING lien_id, allocation_id
""")


def quote_and_hold(session: Session, job_id: str, project_id: int,
                   quotes: Sequence[tuple[str, int, int]], site: str, amount_milli: int,
                   now: datetime, actor: str) -> bool:
    """Store the job's quotes (site, rate card id, amount) and, if one allocation can pay
    the whole `amount_milli` at `site`, hold it; False when the lien was not taken (the
    quotes are stored either way)."""
    txn, reason = str(uuid.uuid4()), f"held for job {job_id}"
    rows = session.connection().execute(_HOLD, {
        "job_id": job_id, "now": now, "project_id": project_id, "site": site,
        "amount": amount_milli, "txn": txn, "actor": actor, "reason": reason,
        "q_sites": [q[0] for q in quotes], "q_cards": [q[1] for q in quotes],
        "q_amounts": [q[2] for q in quotes]}).all()
    if len(rows) != 2:
        return False
    lien_id, allocation_id = rows[0]
    audit.posting(session, "lien", actor, now, txn, reason, job_id, lien_id, None,
                  [(allocation_id, "available", -amount_milli),
                   (allocation_id, "held", amount_milli)])
    return True
