"""Helpers for bank tests: a project with allocations, jobs to hold liens for, usage rows,
and the invariants every commit must keep."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from adapters.base import NativeState
from adapters.usage import UsageRecord
from gateway.db.bank_models import Allocation, LedgerEntry, Lien, UsageRow
from gateway.db.models import Job, Project, Site
from gateway.services.money import ledger

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
YEAR = timedelta(days=365)


def site(session: Session, name: str) -> str:
    """A site row (the bank's tables refer to sites)."""
    if session.get(Site, name) is None:
        session.add(Site(name=name, kind="slurm", enabled=True, drained=False, config={},
                         state="up"))
        session.flush()
    return name


def project(session: Session, owner_id: str, name: str | None = None) -> Project:
    """A project of `owner_id` (who must exist)."""
    p = Project(name=name or f"p-{uuid.uuid4().hex[:8]}", description="test")
    session.add(p)
    session.flush()
    return p


def job(session: Session, owner_id: str, project_id: int, site_name: str | None = None) -> str:
    """A job row to hold liens for."""
    job_id = str(uuid.uuid4())
    session.add(Job(id=job_id, owner_id=owner_id, project_id=project_id, name="j", spec={},
                    state="ACCEPTED", site_name=site_name, created_at=NOW, updated_at=NOW))
    session.flush()
    return job_id


def usage_row(session: Session, job_id: str, site_name: str, native_id: str, run: int = 0,
              **changes: object) -> tuple[UsageRow, UsageRecord]:
    """A stored usage record of one run (and the record it was made from)."""
    values: dict[str, object] = dict(
        native_id=native_id, run=run, state=NativeState.COMPLETED, reason=None, exit_code=0,
        started_at=NOW, ended_at=NOW + timedelta(hours=1), elapsed=3600, cores=2,
        nodes=1, source="sacct", raw=f"{native_id}|COMPLETED")
    values.update(changes)
    record = UsageRecord(**values)  # type: ignore[arg-type]
    row = UsageRow(site_name=site_name, native_id=native_id, run=run, job_id=job_id,
                   source=record.source, received_at=NOW, started_at=record.started_at,
                   ended_at=record.ended_at, elapsed=record.elapsed,
                   cores=record.cores, nodes=record.nodes, gpus=record.gpus,
                   memory_mb=record.memory_mb, state=record.state.value,
                   reason=record.reason, exit_code=record.exit_code, raw=record.raw)
    session.add(row)
    session.flush()
    return row, record


def check_invariants(session: Session) -> None:
    """Every allocation's running sums equal its ledger (held: its open liens), every
    transaction balances, and available = deposits - charges + refunds - held, never
    below the credit limit."""
    unbalanced = session.execute(
        select(LedgerEntry.txn).group_by(LedgerEntry.txn)
        .having(func.sum(LedgerEntry.amount_milli) != 0)).all()
    assert unbalanced == []
    for a in session.scalars(select(Allocation)):
        sums = ledger.sums_as_of(session, a.id)
        # Liens are outside the ledger: its available is the row's available plus held.
        assert (a.awarded_milli, a.available_milli + a.held_milli, a.used_milli) == (
            -sums["funding"], sums["available"] + sums["held"], sums["used"]), a.id
        open_liens = session.scalar(
            select(func.coalesce(func.sum(Lien.amount_milli), 0))
            .where(Lien.allocation_id == a.id, Lien.status == "held"))
        assert a.held_milli == open_liens, a.id
        moved_in = session.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount_milli), 0))
            .where(LedgerEntry.allocation_id == a.id, LedgerEntry.kind == "transfer"))
        charges = _kind_sum(session, a.id, "charge", "used")
        refunds = -_kind_sum(session, a.id, "refund", "used")
        assert a.available_milli == (a.awarded_milli + int(moved_in or 0) - charges + refunds
                                     - a.held_milli)
        assert a.held_milli >= 0 and a.used_milli >= 0
        assert a.available_milli >= -a.credit_limit_milli


def _kind_sum(session: Session, allocation_id: int, kind: str, account: str) -> int:
    return int(session.scalar(
        select(func.coalesce(func.sum(LedgerEntry.amount_milli), 0))
        .where(LedgerEntry.allocation_id == allocation_id, LedgerEntry.kind == kind,
               LedgerEntry.account == account)) or 0)


def allocation(session: Session, allocation_id: int) -> Allocation:
    """The allocation as stored now."""
    found = session.get(Allocation, allocation_id, populate_existing=True)
    assert found is not None
    return found
