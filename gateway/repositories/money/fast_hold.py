"""The submission's lien, with its first event, in one round trip on PostgreSQL.

At submit, every gateway thread of a busy project updates the same allocation row, and
the row stays locked until the submission commits; so the work done under that lock is
what bounds a project's submissions per second, and a round trip is a good part of a
submission's cost. So the lien is taken by the statement that inserts the job's first
event (its last statement before the audit log's entries at commit): it stores the quotes,
draws and holds the lien (a reservation: no ledger legs, see gateway.services.money.bank). The
allocation is updated with its balance checked again on the row's newest version
(PostgreSQL re-evaluates an UPDATE's condition after waiting for a concurrent one), so
nothing is ever overspent. It draws only when the earliest-ending allocation that can
pay at the site covers the whole amount, exactly what `gateway.services.money.bank.hold` would
do then; any other case (a split across allocations, a balance spent meanwhile) holds
nothing and the caller takes bank.hold's locked path. The event and the lien are logged
in the audit trail as one entry (the event's, carrying the lien's entry data).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.orm import Session

from gateway.repositories.jobs.events import NewEvent
from gateway.repositories.money import audit

_HOLD = text("""
WITH ev AS (
  INSERT INTO events (job_id, at, from_state, to_state, reason, actor, raw_state)
  VALUES (:job_id, :now, :ev_from, :ev_to, :ev_reason, :ev_actor, :ev_raw)
), q AS (
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
)
INSERT INTO liens (job_id, allocation_id, site_name, amount_milli, status, created_at)
SELECT :job_id, drawn.id, :site, :amount, 'held', :now FROM drawn
RETURNING id, allocation_id
""")


def event_and_hold(session: Session, event: NewEvent, project_id: int,
                   quotes: Sequence[tuple[str, int, int]], site: str, amount_milli: int
                   ) -> bool:
    """Insert the job's first `event`, store its quotes (site, rate card id, amount) and,
    if one allocation of the project can pay the whole `amount_milli` at `site`, hold
    it; logs the event, and the lien if taken, in the audit trail. False when the
    lien was not taken (the event and quotes are written either way)."""
    job_id, now = event.job_id, event.at
    rows = session.connection().execute(_HOLD, {
        "job_id": job_id, "now": now, "project_id": project_id, "site": site,
        "ev_from": event.from_state, "ev_to": event.to_state, "ev_reason": event.reason,
        "ev_actor": event.actor, "ev_raw": event.raw_state,
        "amount": amount_milli,
        "q_sites": [q[0] for q in quotes], "q_cards": [q[1] for q in quotes],
        "q_amounts": [q[2] for q in quotes]}).all()
    if not rows:
        event.log(session)
        return False
    lien_id, allocation_id = rows[0]
    # One entry for the event and the lien: one row and one leaf fewer.
    event.log(session, {"kind": "lien", **audit.lien_data(
        lien_id, allocation_id, amount_milli, f"held for job {job_id}")})
    return True
