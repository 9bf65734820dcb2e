"""Charges on the live testbed, from real accounting: `sacct` on Slurm (roadrunner, with
slurmdbd) and `qacct` on Grid Engine (galaxy). At each site a 2-core job killed at its
walltime, a job cancelled while it waits behind it, a job that fails at once, a normal
2-core job and (Slurm) a job requeued while it runs each get the charge the rules in
gateway.accounting.charging say; and a worker killed with -9 after posting the charges
but before committing them leaves a state the next worker charges exactly once."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from adapters.base import NativeState
from adapters.usage import UsageRecord
from gateway.accounting.charging import charge_for
from gateway.accounting.units import milli
from gateway.db.bank_models import Allocation, LedgerEntry, Lien, UsageRow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, User
from gateway.repositories.jobs.rows import personal_project
from gateway.repositories.money import rate_cards
from gateway.services.money import allocations
from gateway.services.money.allocations import Grant
from gateway.worker.settle import FAULT_BEFORE_CHARGE_ENV
from testbed.state import TestbedInfo
from tests.live.gateway import FINAL, LiveGateway, live_gateway
from tests.live.scheduler_jobs import COMMUNITY
from tests.services.bank_fixtures import check_invariants
from tests.testbed.fixture import ssh
from tests.waiting_jobs import let_go_at, waits
from tests.worker.gateway_process import GatewayProcess

SITES = ("roadrunner", "galaxy")
USER = "payer"


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, SITES, tmp_path_factory.mktemp("charges"),
                      allocations_enforced=True, local_site_enabled=False) as gw:
        gw.token(USER)
        now = gw.runtime.clock()
        with transaction(gw.runtime.sessions) as s:
            user_id = s.scalar(select(User.id).where(User.username == USER))
            assert user_id is not None
            project = personal_project(s.connection(), user_id)
            assert project is not None
            allocations.grant(s, Grant(project.name, "*", milli(100), now - timedelta(days=1),
                                       now + timedelta(days=30)), set(SITES), "committee",
                              "live charges", now)
        yield gw


def _job(gw: LiveGateway, site: str, name: str, script: str, walltime: int = 120,
         cores: int = 1) -> str:
    return gw.submit(gw.token(USER), {
        "name": name, "site": site, "executable": "/bin/sh", "args": ["-c", script],
        "resources": {"ranks": 1, "threads_per_rank": cores, "walltime": walltime}})


def _rows(gw: LiveGateway, job_id: str) -> list[UsageRow]:
    with gw.runtime.sessions() as s:
        return list(s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)
                              .order_by(UsageRow.run)))


def _settled(gw: LiveGateway, job_ids: list[str], deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with gw.runtime.sessions() as s:
            if s.scalars(select(Lien).where(Lien.job_id.in_(job_ids),
                                            Lien.status == "held")).first() is None:
                return
        gw.worker.run_once()
        time.sleep(0.5)
    raise AssertionError(f"liens still held after {deadline:.0f}s")


def _expected(gw: LiveGateway, site: str, row: UsageRow, walltime: int) -> int:
    with gw.runtime.sessions() as s:
        card = rate_cards.current(s, site)
        assert card is not None
    record = UsageRecord(row.native_id, row.run, NativeState(row.state), row.reason,
                         row.exit_code, row.started_at, row.ended_at, row.elapsed,
                         row.cores, row.nodes, row.source, row.raw)
    charge = charge_for(record, rate_cards.rate_of(card), walltime,
                        milli(gw.runtime.settings.refund_cap_su))
    return charge.amount_milli


def _running(gw: LiveGateway, job_id: str) -> dict[str, Any]:
    return gw.until([job_id], lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)[job_id]


def test_each_kind_of_end_is_charged_by_the_rules(gw: LiveGateway, testbed: TestbedInfo
                                                  ) -> None:
    # Both sites at once: the walltime job holds each site's two cores for its minute.
    filler = {site: _job(gw, site, "walltime", "sleep 600", walltime=60, cores=2)
              for site in SITES}
    gw.until(list(filler.values()), lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)
    waiting = {site: _job(gw, site, "cancel me", "sleep 5") for site in SITES}
    gw.until(list(waiting.values()),
             lambda j: bool(j["attempts"]) and j["attempts"][-1]["native_id"])
    for job_id in waiting.values():
        gw.cancel(job_id)
    failing = {site: _job(gw, site, "exit 3", "exit 3") for site in SITES}
    normal = {site: _job(gw, site, "two cores", "sleep 3", cores=2) for site in SITES}
    # Requeued while it waits (a run of some seconds: charged above nothing); its second
    # run, let go, ends by itself.
    requeued_go = f"/tmp/go-requeued-{uuid.uuid4().hex[:8]}"
    requeued = _job(gw, "roadrunner", "requeued", waits("sleep 2", go=requeued_go))
    job = _running(gw, requeued)
    assert job["state"] == "RUNNING", job
    time.sleep(4)
    ssh(testbed.sites["roadrunner"], COMMUNITY,
        ["scontrol", "requeue", job["attempts"][-1]["native_id"]])
    let_go_at(testbed.sites["roadrunner"], requeued_go)
    jobs = [requeued, *(j for kind in (filler, waiting, failing, normal)
                        for j in kind.values())]
    final = gw.until(jobs, lambda j: j["state"] in FINAL, deadline=400)
    _settled(gw, jobs)

    for site in SITES:
        assert final[filler[site]]["reason"] == "TIMEOUT"
        assert final[waiting[site]]["state"] == "CANCELLED"
        assert final[failing[site]]["exit_code"] == 3
        for job_id, walltime in ((filler[site], 60), (failing[site], 120),
                                 (normal[site], 120)):
            [row] = _rows(gw, job_id)
            assert row.source == ("sacct" if site == "roadrunner" else "qacct")
            assert row.charged_milli == _expected(gw, site, row, walltime), row.rule
        [timeout] = _rows(gw, filler[site])
        assert timeout.elapsed >= 60 and timeout.cores == 2
        assert ("charged up to the walltime" in (timeout.rule or "")
                or timeout.elapsed == 60)
        [two] = _rows(gw, normal[site])
        assert two.cores == 2 and two.charged_milli and two.charged_milli > 0
        # Cancelled while pending: nothing (Slurm keeps a record of 0 s; Grid Engine none).
        assert all(r.charged_milli == 0 for r in _rows(gw, waiting[site]))
    runs = _rows(gw, requeued)
    assert [r.run for r in runs] == [0, 1]
    assert all(r.charged_milli == _expected(gw, "roadrunner", r, 120) > 0 for r in runs)
    with gw.runtime.sessions() as s:
        check_invariants(s)
        held = s.scalars(select(Allocation.held_milli)).all()
    assert held == [0]


def test_a_worker_killed_before_the_charge_commits_charges_once(
        gw: LiveGateway, tmp_path: Path) -> None:
    jobs = {site: _job(gw, site, "killed worker", "sleep 2", cores=2) for site in SITES}
    steps = gw.worker.site_steps
    gw.worker.site_steps = tuple(s for s in steps if s[0] != "settle")
    try:
        gw.until(list(jobs.values()), lambda j: j["state"] in FINAL)
    finally:
        gw.worker.site_steps = steps
    settings = gw.runtime.settings
    crashing = GatewayProcess({
        "GRIDGATE_DATA_DIR": str(settings.data_dir),
        "GRIDGATE_DATABASE_URL": settings.resolved_database_url,
        "GRIDGATE_PUBLIC_URL": settings.public_url,
        "GRIDGATE_SITE_CONFIGS_DIR": str(settings.site_configs_dir),
        "GRIDGATE_LOCAL_SITE_ENABLED": "false",
        "GRIDGATE_ALLOCATIONS_ENFORCED": "true",
        FAULT_BEFORE_CHARGE_ENV: "exit"}, tmp_path / "worker.log", worker_only=True)
    crashing.start()
    assert crashing.proc is not None
    assert crashing.proc.wait(timeout=120) == 137, (tmp_path / "worker.log").read_text()[-3000:]
    # Killed after posting: nothing of it was committed.
    assert all(_rows(gw, job_id) == [] for job_id in jobs.values())
    _settled(gw, list(jobs.values()))
    for job_id in jobs.values():
        [row] = _rows(gw, job_id)
        with gw.runtime.sessions() as s:
            charges = s.scalars(select(LedgerEntry).where(
                LedgerEntry.job_id == job_id, LedgerEntry.kind == "charge",
                LedgerEntry.account == "used")).all()
            assert len(s.scalars(select(Attempt).where(Attempt.job_id == job_id)).all()) == 1
        assert row.charged_milli and sum(c.amount_milli for c in charges) == row.charged_milli
    with gw.runtime.sessions() as s:
        check_invariants(s)
