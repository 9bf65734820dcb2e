"""The submission's lien, with its first event and its audit links, in one round trip on
PostgreSQL: the submit's last statement before COMMIT.

At submit, every gateway thread of a busy project updates the same allocation row, and
the row stays locked until the submission commits; so what happens while it is locked
bounds a project's submissions per second. Measured (2 server processes on 2 cores), the
gateway's threads are what the database waits for: a transaction holding the row waits
for its thread to get the GIL back after each round trip. So the one statement that
takes the lien also chains the transaction's audit events, and only COMMIT follows it:
the allocation is held across one round trip, no more (before, the lien's statement, the
audit chain's and COMMIT: two). The statement stores the first event and the quotes,
draws, holds the lien, writes its two ledger legs and updates the allocation's running
sums (as gateway.services.ledger does), then locks the audit chain's head (after the
allocation, as every other transaction does: no deadlock) and chains the queued events
and the lien's posting after it, exactly as gateway.repositories.audit_pg would at
commit (the posting's canonical text is made here with the lien's and allocation's ids
left as gaps the statement fills in).

The allocation is updated with its balance checked again on the row's newest version
(PostgreSQL re-evaluates an UPDATE's condition after waiting for a concurrent one), so
nothing is ever overspent. It draws only when the earliest-ending allocation that can pay
at the site covers the whole amount, exactly what `gateway.services.bank.hold` would do
then; any other case (a split across allocations, a balance spent meanwhile) holds
nothing, locks no head, and the caller takes bank.hold's locked path. When the events
cannot be chained here (no head row yet, too many queued, an actor whose name holds the
gap markers) they stay queued and are written at commit as usual.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from functools import cache

from sqlalchemy import text
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import TextClause

from gateway.accounting.audit_chain import as_json, canonical
from gateway.repositories import audit, audit_pg
from gateway.repositories.events import NewEvent

# Markers for the ids the statement fills in: numbers no sequence reaches.
_ALLOCATION_MARK = 7_340_417_113_951_267_201
_LIEN_MARK = 7_340_417_113_951_267_202
_MARKS = re.compile(f"({_ALLOCATION_MARK}|{_LIEN_MARK})")
# The gaps in the lien posting's text, in order (legs before lien: keys are sorted).
_GAP_ORDER = [str(_ALLOCATION_MARK), str(_ALLOCATION_MARK), str(_LIEN_MARK)]

_HOLD = """
ev AS (
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
), h0 AS (
  SELECT last_hash AS hash FROM audit_head
  WHERE id = :head AND CAST(:chain AS boolean) AND EXISTS (SELECT FROM lien)
  FOR UPDATE
)"""


def _filled(prefix: str) -> str:
    """The text of a gapped template (params prefix0..prefix3) with the ids filled in."""
    return (f"CAST(:{prefix}0 AS text) || CAST(lien.allocation_id AS text) || "
            f"CAST(:{prefix}1 AS text) || CAST(lien.allocation_id AS text) || "
            f"CAST(:{prefix}2 AS text) || CAST(lien.id AS text) || CAST(:{prefix}3 AS text)")


@cache
def _statement(n: int) -> TextClause:
    """The statement chaining `n` queued events, then the lien's posting (link n + 1).
    Only the integers k and n are formatted into it; every value is a bind parameter."""
    last = n + 1
    posting = (f"h{last} AS (SELECT h{n}.hash AS prev, encode(sha256(convert_to("  # noqa: S608
               f"h{n}.hash || {_filled('lc')}, 'UTF8')), 'hex') AS hash, "
               f"CAST({_filled('ld')} AS json) AS data FROM h{n} CROSS JOIN lien)")
    rows = " UNION ALL ".join([
        *audit_pg.link_rows(n),
        f"SELECT {last} AS n, CAST(:now AS timestamptz) AS at, "  # noqa: S608
        "CAST('lien' AS varchar) AS kind, CAST(:l_subject AS varchar) AS subject, "
        f"CAST(:actor AS varchar) AS actor, data, prev, hash FROM h{last}"])
    inserted = (
        "ins AS (INSERT INTO audit_events (at, kind, subject, actor, data, prev_hash, hash) "  # noqa: S608
        f"SELECT at, kind, subject, actor, data, prev, hash FROM ({rows}) AS e "
        "ORDER BY n RETURNING id)")
    moved = ("moved AS (UPDATE audit_head SET last_id = (SELECT max(id) FROM ins), "  # noqa: S608
             f"last_hash = (SELECT hash FROM h{last}) WHERE id = :head "
             f"AND EXISTS (SELECT FROM h{last}) RETURNING last_id)")
    ctes = ", ".join([_HOLD.strip(), *audit_pg.link_ctes(n), posting, inserted, moved])
    return text(f"WITH {ctes} SELECT lien.id, lien.allocation_id, "  # noqa: S608
                "(SELECT last_id FROM moved) FROM lien")


def _gaps(filled: str) -> list[str] | None:
    """`filled` cut at its markers: the four pieces around the allocation, allocation and
    lien ids; None if the markers are not exactly those (a name that holds one)."""
    pieces = _MARKS.split(filled)
    return pieces[0::2] if pieces[1::2] == _GAP_ORDER else None


def event_and_hold(session: Session, event: NewEvent, project_id: int,
                   quotes: Sequence[tuple[str, int, int]], site: str, amount_milli: int,
                   actor: str) -> bool:
    """Insert the job's first `event`, store its quotes (site, rate card id, amount) and,
    if one allocation of the project can pay the whole `amount_milli` at `site`, hold
    it; the session's queued audit events, the event and the lien, if taken, are chained
    into the audit trail (here, or at commit). False when the lien was not taken (the
    event and quotes are written either way). The caller commits next."""
    job_id, now = event.job_id, event.at
    txn, reason = str(uuid.uuid4()), f"held for job {job_id}"
    chained = [*audit.queued(session), event.audit_event()]
    marked = as_json(audit.posting_event(
        "lien", actor, now, txn, reason, job_id, _LIEN_MARK, None,
        [(_ALLOCATION_MARK, "available", -amount_milli),
         (_ALLOCATION_MARK, "held", amount_milli)]).data)
    canonical_gaps = _gaps(canonical(now, "lien", f"job:{job_id}", actor, marked).decode())
    data_gaps = _gaps(json.dumps(marked, sort_keys=True))
    chain = (canonical_gaps is not None and data_gaps is not None
             and not session.in_nested_transaction()
             and len(chained) < audit.ONE_STATEMENT_MAX)
    params = {
        "job_id": job_id, "now": now, "project_id": project_id, "site": site,
        "ev_from": event.from_state, "ev_to": event.to_state, "ev_reason": event.reason,
        "ev_actor": event.actor, "ev_raw": event.raw_state,
        "amount": amount_milli, "txn": txn, "actor": actor, "reason": reason,
        "q_sites": [q[0] for q in quotes], "q_cards": [q[1] for q in quotes],
        "q_amounts": [q[2] for q in quotes], "head": audit.HEAD_ID, "chain": chain,
        "l_subject": f"job:{job_id}",
        **audit_pg.link_params([(e.at, e.kind, e.subject, e.actor, e.data) for e in chained])}
    for k in range(4):
        params[f"lc{k}"] = canonical_gaps[k] if canonical_gaps else ""
        params[f"ld{k}"] = data_gaps[k] if data_gaps else ""
    row = session.connection().execute(_statement(len(chained)), params).first()
    if row is not None and row[2] is not None:
        audit.written(session, len(chained) - 1)  # the event was never queued
        return True
    event.chain(session)
    if row is None:
        return False
    lien_id, allocation_id = row[0], row[1]
    audit.posting(session, "lien", actor, now, txn, reason, job_id, lien_id, None,
                  [(allocation_id, "available", -amount_milli),
                   (allocation_id, "held", amount_milli)])
    return True
