"""Scale out (issue 32, item 5): two gateway hosts on one PostgreSQL serve a federation of
40 distant sites, and either host dies at random while jobs are submitted, run and are
charged; nothing is lost and nothing is done twice.

Each host is a process group of its own: the API (`gridgate serve`, its worker off) and a
`gridgate worker`, both on one database and one data directory (what a shared filesystem
gives real hosts). The 40 sites are login hosts (testbed.login_hosts: each its own sshd,
host key and link, round trips spread from 10 to 200 ms) in front of two of the testbed's
schedulers: Slurm at roadrunner, Grid Engine at galaxy. A client submits through either
host with an Idempotency-Key and, when a host dies under its request,
asks the other with the same key. Meanwhile one host or the other is killed with -9 (the
whole group: API and worker together) at random moments and started again.

Proof, counted where it happened: every key is one job; every job COMPLETED with one
attempt, one QUEUED and one COMPLETED event, and one job at its scheduler (by tag, asked
of the scheduler itself); one usage row and one charge each; the allocation's sums equal
its ledger; the audit log verifies.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
import yaml
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import InstrumentedAttribute

from gateway.accounting.units import milli
from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.bank_models import LedgerEntry, Lien, UsageRow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Event, Job
from gateway.repositories.jobs.rows import personal_project
from gateway.runtime import Runtime, build_runtime
from gateway.services.money import allocations, audit
from gateway.services.money.allocations import Grant
from gateway.settings import Settings
from testbed import login_hosts
from testbed.config import TestbedConfig
from testbed.login_hosts import LoginHost
from testbed.state import SiteInfo, TestbedInfo
from tests.conftest import ALL_SCOPES
from tests.live.scheduler_jobs import jobs_by_name
from tests.services.bank_fixtures import check_invariants
from tests.worker.gateway_process import GatewayHost

pytestmark = pytest.mark.uses_testbed

# Both run jobs under one community account (parnass2 maps each user to their own).
SCHEDULERS = ("roadrunner", "galaxy")
SITES = 40
JOBS = 40  # one at each site: each scheduler runs two at a time
KILLS = 4
LEASE_SECONDS = 3
USER = "scaleout"


@dataclass
class Federation:
    """The 40 sites (gateway site name: the testbed site behind it) and the gateway's
    shared state: database, data directory, site configs."""

    runtime: Runtime
    env: dict[str, str]
    behind: dict[str, SiteInfo]
    headers: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def federation(testbed: TestbedInfo, database_url: str, tmp_path: Path
               ) -> Iterator[Federation]:
    config = TestbedConfig.from_env(prefix=testbed.prefix, subnet=testbed.subnet)
    configs = tmp_path / "site-configs"
    configs.mkdir()
    rtts = login_hosts.spread(SITES, 10, 200)
    started: list[tuple[SiteInfo, list[LoginHost]]] = []
    behind: dict[str, SiteInfo] = {}
    runtime: Runtime | None = None
    try:
        for i, name in enumerate(SCHEDULERS):
            site = testbed.sites[name]
            # Round trips dealt in turn, so each scheduler has near and far login hosts.
            hosts = login_hosts.start(config, site, rtts[i::len(SCHEDULERS)],
                                      prefix=f"so{name[0]}")
            started.append((site, hosts))
            for host in hosts:
                (configs / f"{host.name}.yaml").write_text(
                    yaml.safe_dump(login_hosts.site_config(site, host, host.name)))
                behind[host.name] = site
        settings = Settings(data_dir=tmp_path / "data", database_url=database_url,
                            site_configs_dir=configs, local_site_enabled=False,
                            run_worker=False, allocations_enforced=True,
                            public_url="http://gateway.test")
        runtime = build_runtime(settings)
        env = {"GRIDGATE_DATA_DIR": str(settings.data_dir),
               "GRIDGATE_DATABASE_URL": database_url,
               "GRIDGATE_PUBLIC_URL": settings.public_url,
               "GRIDGATE_SITE_CONFIGS_DIR": str(configs),
               "GRIDGATE_LOCAL_SITE_ENABLED": "false",
               "GRIDGATE_ALLOCATIONS_ENFORCED": "true",
               "GRIDGATE_SUBMIT_LEASE_SECONDS": str(LEASE_SECONDS),
               "GRIDGATE_WORKER_POLL_SECONDS": "1"}
        fed = Federation(runtime, env, behind)
        fed.headers = _researcher(runtime, set(behind))
        yield fed
    finally:
        if runtime is not None:
            runtime.close()
        for site, hosts in started:
            login_hosts.stop(config, site, hosts)


def _researcher(runtime: Runtime, sites: set[str]) -> dict[str, str]:
    """A researcher whose personal project holds an allocation at every site; headers."""
    now = runtime.clock()
    with transaction(runtime.sessions) as session:
        user_id = create_local_user(session, USER, "correct horse battery").id
        project = personal_project(session.connection(), user_id)
        assert project is not None
        allocations.grant(session, Grant(project.name, "*", milli(1000), now - timedelta(days=1),
                                         now + timedelta(days=30)), sites, "committee",
                          "scale out", now)
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="tests", scope=ALL_SCOPES, username=USER).token
    return {"Authorization": f"Bearer {token}"}


class Client:
    """Submits through either host: a request that a dying host leaves unanswered is
    asked again of the other one with the same Idempotency-Key."""

    def __init__(self, hosts: list[GatewayHost], headers: dict[str, str]) -> None:
        self.hosts = hosts
        self.headers = headers
        self.accepted: dict[str, str] = {}  # idempotency key -> job id
        self.retried = 0

    def submit(self, n: int, site: str) -> None:
        key = f"scale-out-{n}-{uuid.uuid4().hex[:8]}"
        spec = {"name": f"scale out {n}", "site": site, "executable": "/bin/sh",
                "args": ["-c", "sleep 1"], "resources": {"walltime": 120}}
        end = time.monotonic() + 120
        for turn in itertools.count():
            host = self.hosts[(n + turn) % len(self.hosts)]
            try:
                r = httpx.post(f"{host.url}/api/v1/jobs", json=spec, timeout=30,
                               headers={**self.headers, "Idempotency-Key": key})
            except httpx.TransportError:
                self.retried += 1
                if time.monotonic() > end:
                    raise
                time.sleep(0.2)
                continue
            assert r.status_code == 202, r.text
            self.accepted[key] = r.json()["id"]
            return


def _settled(runtime: Runtime, job_ids: list[str]) -> bool:
    """Every job COMPLETED and charged (no lien held for it)."""
    with runtime.sessions() as session:
        done = session.scalar(select(func.count()).select_from(Job).where(
            Job.id.in_(job_ids), Job.state == "COMPLETED")) or 0
        held = session.scalar(select(func.count()).select_from(Lien).where(
            Lien.job_id.in_(job_ids), Lien.status == "held")) or 0
    return done == len(job_ids) and held == 0


def _counts(runtime: Runtime, column: InstrumentedAttribute[str | None],
            *where: ColumnElement[bool]) -> dict[str | None, int]:
    """How many rows for each value of `column`, among those `where` selects."""
    with runtime.sessions() as session:
        rows = session.execute(select(column, func.count()).where(*where).group_by(column))
        return {value: count for value, count in rows}


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_two_hosts_killed_at_random_lose_nothing_and_run_nothing_twice(
        federation: Federation, testbed: TestbedInfo, tmp_path: Path) -> None:
    seed = int(os.environ.get("GRIDGATE_SCALE_OUT_SEED", time.time_ns() % 10**6))
    rng = random.Random(seed)
    runtime = federation.runtime
    sites = sorted(federation.behind)
    hosts = [GatewayHost(federation.env, tmp_path, name) for name in ("host-a", "host-b")]
    client = Client(hosts, federation.headers)
    kills: list[str] = []
    failed: list[BaseException] = []

    def post_all() -> None:
        # Ten at a time, so that the kills fall while jobs are accepted as well as while
        # they are submitted, followed and charged.
        try:
            for n in range(JOBS):
                client.submit(n, sites[n % len(sites)])
                if n % 10 == 9:
                    time.sleep(1.5)
        except BaseException as exc:  # shown by the test, not lost in the thread
            failed.append(exc)

    for host in hosts:
        host.start()
    poster = threading.Thread(target=post_all, daemon=True)
    try:
        poster.start()
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.5, 4))
            victim = rng.choice(hosts)
            victim.kill9()
            kills.append(victim.name)
            time.sleep(rng.uniform(0, 2))
            victim.start()
        poster.join(timeout=300)
        if failed:
            raise failed[0]
        assert not poster.is_alive() and len(client.accepted) == JOBS, (seed, kills)
        job_ids = list(client.accepted.values())
        end = time.monotonic() + 300
        while not _settled(runtime, job_ids):
            assert time.monotonic() < end, (seed, kills, _counts(
                runtime, Job.state, Job.id.in_(job_ids)))
            time.sleep(1)
    finally:
        for host in hosts:
            host.stop()

    context = f"seed {seed}, kills {kills}, {client.retried} requests asked again"
    # Every key one job (nothing lost, nothing accepted twice).
    assert len(set(client.accepted.values())) == JOBS, context
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == JOBS, context
        attempts = session.execute(select(Attempt.job_id, Attempt.site_name, Attempt.tag,
                                          Attempt.native_id)).all()
    # One attempt each, one QUEUED and one COMPLETED event each.
    assert sorted(a.job_id for a in attempts) == sorted(job_ids), context
    for state in ("QUEUED", "COMPLETED"):
        assert _counts(runtime, Event.job_id, Event.to_state == state) == dict.fromkeys(
            job_ids, 1), (state, context)
    # One job at its scheduler for each tag, the one the gateway recorded.
    at_scheduler = {name: jobs_by_name(testbed.sites[name]) for name in SCHEDULERS}
    for attempt in attempts:
        found = at_scheduler[federation.behind[attempt.site_name].name].get(attempt.tag, set())
        assert found == {attempt.native_id}, (attempt, found, context)
    # One usage row and one charge each; the allocation's sums are its ledger's.
    assert _counts(runtime, UsageRow.job_id) == dict.fromkeys(job_ids, 1), context
    assert _counts(runtime, LedgerEntry.job_id, LedgerEntry.kind == "charge",
                   LedgerEntry.account == "used") == dict.fromkeys(job_ids, 1), context
    with runtime.sessions() as session:
        check_invariants(session)
    with runtime.sessions() as session:
        verdict = audit.verify(session, runtime.keys, runtime.clock())
    assert verdict["ok"] and verdict["broken"] is None, (verdict, context)
    assert verdict["events"] > 0
