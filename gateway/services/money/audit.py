"""Checking the audit trail: the whole log, walked in leaf order in constant memory against
every signed tree head; every ledger transaction against the seal of the entry that
records it; and the ledger and the open liens against the allocations' running sums.
Auditors and admins only."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from gateway.accounting import audit_log, ledger_seal
from gateway.auth.keys import SigningKeys
from gateway.auth.project_access import is_auditor
from gateway.domain.errors import Forbidden
from gateway.domain.principal import Principal
from gateway.repositories.money import audit, audit_tree, ledger_seals, liens
from gateway.schemas.audit import (
    AuditBreakOut,
    AuditVerifyOut,
    LedgerDifferenceOut,
    LedgerSealsOut,
)
from gateway.services.money import ledger
from gateway.services.money.audit_tree import head_out, signed_by

# How many ledger problems of each kind a report names (the first ones, by id).
SHOWN = 10


def require_auditor(principal: Principal) -> None:
    """Forbidden unless the caller is an auditor or an administrator."""
    if not is_auditor(principal):
        raise Forbidden("Only an auditor or a gateway administrator may check the audit trail.")


def verify(session: Session, keys: SigningKeys, now: datetime) -> AuditVerifyOut:
    """Walk the log against its signed heads (signed by `keys`) and check the ledger, all
    in one snapshot (`session` must not have begun yet): an entry or a head committed
    meanwhile is not half seen."""
    postgres = session.get_bind().dialect.name == "postgresql"
    # SQLite's transactions already are snapshots (and take the write lock here).
    conn = session.connection(execution_options={"isolation_level": "REPEATABLE READ"}
                              if postgres else None)
    latest = audit_tree.latest_head(conn)
    leaves = (audit_log.Leaf(e.seq, e.id, e.kind, e.subject, e.leaf(), _unhex(recorded))
              for e, recorded in audit.leaves(conn) if e.seq is not None)
    heads = (audit_log.Head(h.size, h.at, _unhex(h.root) or b"", signed_by(keys, h))
             for h in audit_tree.heads(conn))
    verdict = audit_log.verify(leaves, heads, lambda h: audit.leaf_index(conn, h.hex()),
                               lambda wanted: audit_tree.nodes(conn, wanted))
    pending, oldest = audit.unsequenced(conn)
    broken = verdict.broken
    seals = _ledger_seals(conn)
    allocations, problems = _ledger_problems(session)
    return AuditVerifyOut(
        ok=broken is None and not problems and not seals["differ"], checked_at=now,
        events=verdict.leaves, head=None if latest is None else head_out(latest),
        pending=pending, oldest_pending_at=oldest,
        broken=None if broken is None else AuditBreakOut(
            event_id=broken.event_id, fault=broken.fault.value, detail=broken.detail),
        allocations=allocations, ledger_problems=problems, ledger_seals=seals)


def _unhex(digest: str | None) -> bytes | None:
    """A stored hex hash as bytes; None when missing, and what no hash is (garbage
    written over it) as b"", which matches nothing."""
    if digest is None:
        return None
    try:
        return bytes.fromhex(digest)
    except ValueError:
        return b""


def _ledger_seals(conn: Connection) -> LedgerSealsOut:
    """Each ledger transaction against the seal of the link that records it (links from
    before the seal: counted as unbound), then the transactions no link records."""
    out = LedgerSealsOut(bound=0, unbound=0, differ=0, first=None)
    for link, legs in ledger_seals.recorded(conn):
        if link.version is None:
            out["unbound"] += 1
            continue
        why = ledger_seal.mismatch(link, legs)
        if why is None:
            out["bound"] += 1
        else:
            out["differ"] += 1
            if out["first"] is None:
                out["first"] = LedgerDifferenceOut(
                    txn=link.txn, at=link.at, kind=link.kind, event_id=link.event_id,
                    detail=f"{why}; {_as_recorded(conn, link.event_id)}")
    for txn, entry, at, kind in ledger_seals.unrecorded(conn):
        out["differ"] += 1
        if out["first"] is None:
            out["first"] = LedgerDifferenceOut(
                txn=txn, at=at, kind=kind, event_id=None,
                detail=f"no entry of the audit log records it (its first leg is ledger entry "
                       f"{entry}): it was written into the ledger outside the gateway")
    return out


def _as_recorded(conn: Connection, event_id: int) -> str:
    """What the link says the transaction moved, in words."""
    link = audit.by_id(conn, event_id)
    legs = link.data.get("legs", []) if link is not None else []
    return "the entry recorded " + ledger_seal.describe(
        (leg["allocation"], leg["account"], leg["amount_milli"]) for leg in legs)


def _ledger_problems(session: Session) -> tuple[int, list[str]]:
    """(allocations checked, problems): running sums that differ from the ledger or, for
    `held`, from the open liens; and transactions whose legs do not sum to zero."""
    problems: list[str] = []
    checked = 0
    open_liens = liens.held_by_allocation(session)
    for a in audit.allocations(session):
        checked += 1
        sums = ledger.sums_as_of(session, a.id)
        pairs = {  # running sum, what the ledger (or the liens) says
            "awarded": (a.awarded_milli, -sums["funding"]),
            "available + held": (a.available_milli + a.held_milli,
                                 sums["available"] + sums["held"]),
            "used": (a.used_milli, sums["used"]),
            "held": (a.held_milli, open_liens.get(a.id, 0)),
        }
        differ = [f"{name} {stored} ({'open liens' if name == 'held' else 'ledger'} {found})"
                  for name, (stored, found) in pairs.items() if stored != found]
        if differ and len(problems) < SHOWN:
            problems.append(f"allocation {a.id}: running sums differ from its ledger: "
                            + ", ".join(differ))
    problems += [f"ledger transaction {txn} (from entry {first}) sums to {total}, not 0"
                 for txn, total, first in audit.unbalanced(session, SHOWN)]
    return checked, problems

