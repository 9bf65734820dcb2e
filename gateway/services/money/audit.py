"""Checking the audit trail: the whole hash chain, walked in id order in constant memory;
every ledger transaction against the seal of the link that records it; and the ledger and
the open liens against the allocations' running sums. Auditors and admins only."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from gateway.accounting import audit_chain, ledger_seal
from gateway.auth.project_access import is_auditor
from gateway.domain.errors import Forbidden
from gateway.domain.principal import Principal
from gateway.repositories.money import audit, ledger_seals, liens
from gateway.schemas.audit import (
    AuditBreakOut,
    AuditHeadOut,
    AuditVerifyOut,
    LedgerDifferenceOut,
    LedgerSealsOut,
)
from gateway.services.money import ledger

# How many ledger problems of each kind a report names (the first ones, by id).
SHOWN = 10


def require_auditor(principal: Principal) -> None:
    """Forbidden unless the caller is an auditor or an administrator."""
    if not is_auditor(principal):
        raise Forbidden("Only an auditor or a gateway administrator may check the audit trail.")


def verify(session: Session, now: datetime) -> AuditVerifyOut:
    """Walk the chain to its first broken link and check the ledger, all in one snapshot
    (`session` must not have begun yet): an append committed meanwhile is not half seen."""
    postgres = session.get_bind().dialect.name == "postgresql"
    # SQLite's transactions already are snapshots (and take the write lock here).
    conn = session.connection(execution_options={"isolation_level": "REPEATABLE READ"}
                              if postgres else None)
    head = audit.head(conn)
    verdict = audit_chain.verify(audit.links(conn), head, lambda h: audit.find(conn, h))
    broken = verdict.broken
    seals = _ledger_seals(conn)
    allocations, problems = _ledger_problems(session)
    return AuditVerifyOut(
        ok=broken is None and not problems and not seals["differ"], checked_at=now,
        events=verdict.events,
        head=None if head is None else AuditHeadOut(last_id=head[0], last_hash=head[1]),
        broken=None if broken is None else AuditBreakOut(
            event_id=broken.event_id, fault=broken.fault.value, detail=broken.detail),
        allocations=allocations, ledger_problems=problems, ledger_seals=seals)


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
                detail=f"no link of the audit chain records it (its first leg is ledger entry "
                       f"{entry}): it was written into the ledger outside the gateway")
    return out


def _as_recorded(conn: Connection, event_id: int) -> str:
    """What the link says the transaction moved, in words."""
    link = audit.by_id(conn, event_id)
    legs = link.data.get("legs", []) if link is not None else []
    return "the link recorded " + ledger_seal.describe(
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

