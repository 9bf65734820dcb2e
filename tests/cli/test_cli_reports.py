"""`gridgate report ...` and `gridgate usage` against a live gateway (SQLite and
PostgreSQL) holding the bank history of tests/services/report_fixtures.py: tables, --json,
--csv, --as-of, and the access rule (another project is "not found", exit 6)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.cli import errors
from gateway.cli.reports import elapsed
from gateway.db.engine import transaction
from gateway.db.job_relation_models import JobArray
from gateway.db.models import Job, User
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway, serve_gateway
from tests.services import bank_fixtures as bf
from tests.services import report_fixtures as rf
from tests.services.bank_fixtures import NOW
from tests.services.report_fixtures import World


@dataclass
class People:
    world: World
    pi: Cli
    member: Cli


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    """A live gateway without a worker (the history's waiting job must stay as it is),
    whose clock reads the history's NOW."""
    overrides: dict[str, object] = {"run_worker": False}
    if request.param == "postgresql":
        databases = request.getfixturevalue("pg_databases")
        overrides["database_url"] = databases.create()
    try:
        with serve_gateway(tmp_path_factory.mktemp("gateway"), **overrides) as gw:
            gw.runtime.clock = lambda: NOW
            yield gw
    finally:
        if "database_url" in overrides:
            databases.drop(str(overrides["database_url"]))


def _logged_in(gateway: LiveGateway, config_dir: Path, name: str) -> tuple[Cli, str]:
    creds = gateway.login(config_dir, name)
    with gateway.runtime.sessions() as s:
        user_id = s.scalar(select(User.id).where(
            User.display_name == f"client {name} ({creds.client_id})"))
    assert user_id is not None
    cli = Cli(gateway, config_dir)
    cli.env["COLUMNS"] = "200"  # report tables are wide; a narrow one truncates cells
    return cli, user_id


@pytest.fixture(scope="module")
def people(gateway: LiveGateway, tmp_path_factory: pytest.TempPathFactory) -> People:
    base = tmp_path_factory.mktemp("people")
    (pi, pi_id), (member, member_id), (_, other_id) = (
        _logged_in(gateway, base / name, name) for name in ("pi", "member", "other"))
    with transaction(gateway.runtime.sessions) as s:
        world = rf.build(s, pi_id, member_id, other_id)
    return People(world, pi, member)


def test_report_allocations_table_json_csv_and_as_of(people: People) -> None:
    astro = people.world.astro
    table = people.pi("report", "allocations", "--project", astro)
    [line] = [row for row in table.stdout.splitlines() if astro in row]
    # AWARDED USED HELD REMAINING SU/DAY
    assert line.split()[4:9] == ["110.000", "10.000", "5.000", "95.000", "0.266"]
    assert table.stderr.startswith("As of ") and "From the ledger rows" in table.stderr
    document = people.pi.json("report", "allocations", "--project", astro)
    assert document["allocations"][0]["remaining_su"] == 95.0
    as_csv = people.pi("report", "allocations", "--project", astro, "--csv").stdout
    [row] = list(csv.DictReader(io.StringIO(as_csv)))
    assert (row["awarded_su"], row["held_su"]) == ("110.0", "5.0")
    # j1 was held for at 10:48 and charged at noon, a day after the grant: in between,
    # its lien is held and nothing used.
    past = people.pi.json("report", "allocations", "--project", astro,
                          "--as-of", "2026-10-17T11:30:00")
    assert [(a["used_su"], a["held_su"]) for a in past["allocations"]] == [(0.0, 3.0)]


def test_report_usage_waits_and_adjustments(people: People) -> None:
    by_site = people.pi("report", "usage", "--by", "site").stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in by_site[1:]}
    # SITE JOBS RUNS CORE-HOURS SU/CORE-HOUR CHARGED REFUNDED NET: the PI's whole project.
    assert rows["alpha"][1:4] == ["2", "2", "18.000"] and rows["alpha"][-1] == "2.000"
    assert rows["beta"][4:6] == ["2", "(v1)"] and rows["beta"][-1] == "8.000"
    assert rows["total"][-1] == "10.000"
    by_user = people.member.json("report", "usage", "--by", "user")
    assert [r["net_su"] for r in by_user["rows"]] == [8.0]
    waits = people.pi("report", "waits", "--project", people.world.astro).stdout
    assert "all sites" in waits and "EXPANSION" in waits
    adjustments = people.pi("report", "adjustments", "--project", people.world.astro).stdout
    assert "extra for the review" in adjustments and "refund" in adjustments


def test_usage_like_sacct(people: People) -> None:
    jobs = people.world.jobs
    out = people.member("usage").stdout.splitlines()
    assert out[0].split() == ["JOB", "NAME", "SITE", "STATE", "ELAPSED", "CORES", "CHARGE",
                              "SU"]
    listed = {line.split()[0]: line.split()[1:] for line in out[1:]}
    # Short ids, as `gridgate list` shows them (issue 14).
    assert listed[jobs["j3"][:8]] == ["j", "alpha", "COMPLETED", "00:30:00", "32", "0.000"]
    assert listed[jobs["j2"][:8]] == ["j", "beta", "COMPLETED", "01:00:00", "4", "8.000"]
    assert listed[jobs["j4"][:8]] == ["j", "beta", "ACCEPTED", "00:00:00", "0", "0.000"]
    done = json.loads(people.member("usage", "--state", "completed", "--json").stdout)
    assert [j["job_id"] for j in done["jobs"]] == [jobs["j3"], jobs["j2"]]
    as_csv = list(csv.DictReader(io.StringIO(people.member("usage", "--csv").stdout)))
    assert [r["job_id"] for r in as_csv] == [jobs["j4"], jobs["j3"], jobs["j2"]]
    whole = people.pi.json("usage", "--project", people.world.astro)
    assert len(whole["jobs"]) == 4


def test_usage_without_records_and_array_tasks(gateway: LiveGateway, tmp_path: Path) -> None:
    """Issue 28: jobs that ran before allocations were enforced (no usage record) show
    what the gateway saw of them, '-' where it saw nothing, never 00:00:00 and 0 cores;
    an array's tasks read ARRAY_INDEX, by index, as sacct lists them."""
    cli, user_id = _logged_in(gateway, tmp_path / "early", "early")
    start = NOW - timedelta(days=1)
    with transaction(gateway.runtime.sessions) as s:
        project = bf.project(s, user_id)
        bf.site(s, "alpha")  # its own: not left by an earlier test (alone it failed)

        def job(state: str, ranks: int, ran: timedelta | None, ended: bool = True) -> str:
            job_id = bf.job(s, user_id, project.id, "alpha")
            row = s.get(Job, job_id)
            assert row is not None
            row.state, row.spec = state, {"resources": {"ranks": ranks}}
            row.created_at = start - timedelta(hours=1)
            if ran is not None:
                row.started_at = start
                row.ended_at = start + ran if ended else None
            return job_id

        old = job("COMPLETED", 4, timedelta(minutes=90))
        lost = job("FAILED", 2, timedelta(0), ended=False)  # its end was never seen
        array_id = "89ee4133-0000-4000-8000-000000000000"
        s.add(JobArray(id=array_id, owner_id=user_id, name="sweep", spec="{}",
                       task_count=6, created_at=start))
        s.flush()
        for index in (0, 5, 4, 2, 3, 1):  # stored (and given ids) in no order
            task = s.get(Job, job("COMPLETED", 1, timedelta(seconds=5 + index)))
            assert task is not None
            task.array_job_id, task.array_index, task.created_at = array_id, index, start
    out = cli("usage").stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    # Newest first; the array's tasks (newer than the other two) by index.
    assert [r[0] for r in rows[:6]] == [f"89ee4133_{i}" for i in range(6)]
    assert sorted(r[0] for r in rows[6:]) == sorted([old[:8], lost[:8]])
    listed = {r[0]: r[1:] for r in rows}
    assert listed[old[:8]] == ["j", "alpha", "COMPLETED", "01:30:00", "4", "0.000"]
    assert listed[lost[:8]] == ["j", "alpha", "FAILED", "-", "2", "0.000"]
    assert listed["89ee4133_3"] == ["j", "alpha", "COMPLETED", "00:00:08", "1", "0.000"]
    document = cli.json("usage")["jobs"]
    by_id = {j["job_id"]: j for j in document}
    assert (by_id[old]["elapsed"], by_id[old]["cores"], by_id[old]["runs"]) == (5400, 4, 0)
    assert by_id[lost]["elapsed"] is None and by_id[lost]["array_job_id"] is None
    assert [(j["array_job_id"], j["array_index"]) for j in document[:6]] == [
        (array_id, i) for i in range(6)]


def test_another_project_is_not_found(people: People) -> None:
    for args in (["report", "allocations"], ["report", "usage"], ["usage"]):
        result = people.member(*args, "--project", people.world.geo, code=errors.NOT_FOUND)
        assert "No project named" in result.stderr


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "00:00:00"), (59, "00:00:59"), (3600, "01:00:00"), (86_399, "23:59:59"),
    (86_400, "1-00:00:00"), (200_000, "2-07:33:20"), (-5, "00:00:00")])
def test_elapsed_is_written_as_sacct_does(seconds: int, text: str) -> None:
    assert elapsed(seconds) == text
