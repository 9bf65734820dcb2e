"""Projects, members, allocations and balances over the REST API, on SQLite and
PostgreSQL: an admin creates a project and names its PI, grants, adjusts, transfers,
suspends and resumes; the balance shows awarded, used, held and available in SU with
three decimals; bad input is a 422 problem naming the field."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import redirect_stdout
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.cli.render import print_json
from gateway.client import GatewayClient
from gateway.db.bank_models import LedgerEntry
from gateway.db.engine import transaction
from gateway.db.models import Project
from gateway.runtime import Runtime
from gateway.schemas import parse
from gateway.schemas.projects import (
    AllocationList,
    AllocationOut,
    BalanceOut,
    MemberOut,
    ProjectList,
    ProjectOut,
    TransferOut,
)
from gateway.services.money import bank
from gateway.services.money.bank import Payer
from tests.api.test_shared_schemas import _Recording
from tests.conftest import MakeUser, TestUser
from tests.services import bank_fixtures as bf

ENDS = "2099-01-01T00:00:00Z"


def create_project(client: TestClient, admin: TestUser, name: str = "climate") -> Any:
    r = client.post("/api/v1/projects", json={"name": name, "description": "Climate runs"},
                    headers=admin.headers)
    assert r.status_code == 201, r.text
    return r.json()


def grant(client: TestClient, admin: TestUser, project: str = "climate", amount: object = "1000",
          **over: object) -> Any:
    body = {"project": project, "pool": "*", "amount": amount, "ends_at": ENDS,
            "reason": "committee round 1", **over}
    r = client.post("/api/v1/allocations", json=body, headers=admin.headers)
    assert r.status_code == 201, r.text
    return r.json()


def problem(response: Any, status: int) -> Any:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()


def test_admin_creates_a_project_and_names_its_pi(client: TestClient,
                                                  make_user: MakeUser) -> None:
    admin, pi, bob = make_user("root", roles=("admin",)), make_user("pia"), make_user("bob")
    created = client.post("/api/v1/projects", json={"name": "climate"}, headers=admin.headers)
    assert created.status_code == 201 and created.headers["location"] == "/api/v1/projects/climate"
    assert created.json()["members"] == [] and created.json()["standing"] == "admin"
    r = client.post("/api/v1/projects/climate/members", json={"user": "pia", "pi": True},
                    headers=admin.headers)
    assert (r.status_code, r.json()) == (201, {"user": "pia", "role": "pi"})
    # The PI adds a member; adding again is no change (200), --pi promotes.
    add = client.post("/api/v1/projects/climate/members", json={"user": "bob"}, headers=pi.headers)
    assert (add.status_code, add.json()["role"]) == (201, "member")
    again = client.post("/api/v1/projects/climate/members", json={"user": "bob"},
                        headers=pi.headers)
    assert (again.status_code, again.json()["role"]) == (200, "member")
    shown = client.get("/api/v1/projects/climate", headers=bob.headers).json()
    assert shown["standing"] == "member" and shown["personal"] is False
    assert shown["members"] == [{"user": "bob", "role": "member"}, {"user": "pia", "role": "pi"}]
    listed = client.get("/api/v1/projects", headers=pi.headers).json()["items"]
    assert [(p["name"], p["standing"], p["members"]) for p in listed] == [
        ("climate", "pi", 2), ("~pia", "pi", 1)]
    gone = client.delete("/api/v1/projects/climate/members/bob", headers=pi.headers)
    assert gone.status_code == 204
    assert client.get("/api/v1/projects/climate", headers=bob.headers).status_code == 404


def test_the_last_pi_and_a_personal_owner_stay(client: TestClient, make_user: MakeUser) -> None:
    admin, pi = make_user("root", roles=("admin",)), make_user("pia")
    create_project(client, admin)
    client.post("/api/v1/projects/climate/members", json={"user": "pia", "pi": True},
                headers=admin.headers)
    last = problem(client.delete("/api/v1/projects/climate/members/pia", headers=pi.headers),
                   409)
    assert "last PI of project 'climate'" in last["detail"]
    demote = client.post("/api/v1/projects/climate/members", json={"user": "pia"},
                         headers=pi.headers)
    assert problem(demote, 409)["detail"].endswith("name another PI first.")
    owner = client.delete("/api/v1/projects/~pia/members/pia", headers=admin.headers)
    assert "owns the personal project '~pia'" in problem(owner, 409)["detail"]
    # An admin may take the last PI out (the project is then theirs to manage).
    assert client.delete("/api/v1/projects/climate/members/pia",
                         headers=admin.headers).status_code == 204


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "~mine"}, "name"),
    ({"name": "has space"}, "name"),
    ({"name": "line\nbreak"}, "name"),
    ({"name": "-dash"}, "name"),
    ({"name": "x" * 65}, "name"),
    ({"name": ""}, "name"),
    ({"name": "ok", "colour": "red"}, "colour"),
])
def test_bad_project_input_is_a_422_naming_the_field(
        client: TestClient, make_user: MakeUser, body: dict[str, str], field: str) -> None:
    admin = make_user(roles=("admin",))
    found = problem(client.post("/api/v1/projects", json=body, headers=admin.headers), 422)
    fields = [e["field"] for e in found.get("errors", [])] or [found.get("field")]
    assert field in fields, found


def test_duplicate_project_and_unknown_member(client: TestClient, make_user: MakeUser) -> None:
    admin = make_user(roles=("admin",))
    create_project(client, admin)
    dup = problem(client.post("/api/v1/projects", json={"name": "climate"},
                              headers=admin.headers), 409)
    assert dup["detail"] == "A project named 'climate' already exists."
    nobody = problem(client.post("/api/v1/projects/climate/members", json={"user": "ghost"},
                                 headers=admin.headers), 422)
    assert nobody["field"] == "user" and "No user named 'ghost'" in nobody["detail"]
    not_member = problem(client.delete("/api/v1/projects/climate/members/ghost",
                                       headers=admin.headers), 422)
    assert not_member["field"] == "user"


def test_grant_adjust_transfer_suspend_and_the_balance(
        client: TestClient, make_user: MakeUser, runtime: Runtime) -> None:
    admin, member = make_user("root", roles=("admin",)), make_user("bob")
    create_project(client, admin)
    client.post("/api/v1/projects/climate/members", json={"user": "bob"}, headers=admin.headers)
    first = grant(client, admin, amount="1000.5", pool="local", credit_limit=10)
    assert (first["awarded"], first["available"], first["used"], first["held"]) == (
        "1000.500", "1000.500", "0.000", "0.000")
    assert (first["status"], first["pool"], first["credit_limit"], first["created_by"]) == (
        "active", "local", "10.000", "root")
    second = grant(client, admin, amount=250, reason="top-up for the summer school")
    adjusted = client.post(f"/api/v1/allocations/{first['id']}:adjust",
                           json={"amount": "-0.5", "reason": "rounding"}, headers=admin.headers)
    assert adjusted.status_code == 200 and adjusted.json()["awarded"] == "1000.000"
    moved = client.post("/api/v1/allocations:transfer",
                        json={"source": first["id"], "target": second["id"], "amount": 100,
                              "reason": "move to the federation pool"}, headers=admin.headers)
    assert moved.status_code == 200, moved.text
    assert (moved.json()["source"]["available"], moved.json()["source"]["transferred"]) == (
        "900.000", "-100.000")
    assert moved.json()["target"]["available"] == "350.000"
    # A job holds 40 SU of the first allocation, then is charged 15.25.
    with transaction(runtime.sessions) as s:
        project = s.scalar(select(Project).where(Project.name == "climate"))
        assert project is not None
        job = bf.job(s, member.principal.user_id, project.id)
        bank.hold(s, job, Payer(project.id, "climate"), "local", 40_000, runtime.clock(), "bob")
    balance = client.get("/api/v1/projects/climate/balance", headers=member.headers).json()
    lines = {a["id"]: a for a in balance["allocations"]}
    assert (lines[first["id"]]["held"], lines[first["id"]]["available"]) == ("40.000", "860.000")
    assert balance["available"] == "1210.000" and balance["project"] == "climate"
    suspended = client.post(f"/api/v1/allocations/{second['id']}:suspend",
                            json={"reason": "report overdue"}, headers=admin.headers)
    assert suspended.json()["status"] == "suspended"
    balance = client.get("/api/v1/projects/climate/balance", headers=member.headers).json()
    assert balance["available"] == "860.000"  # a suspended allocation spends nothing
    resumed = client.post(f"/api/v1/allocations/{second['id']}:resume",
                          json={"reason": "report received"}, headers=admin.headers)
    assert resumed.json()["status"] == "active"
    # The ledger keeps who approved each action and why.
    with transaction(runtime.sessions) as s:
        entries = s.execute(select(LedgerEntry.kind, LedgerEntry.actor, LedgerEntry.reason)
                            .where(LedgerEntry.kind != "lien").distinct()).all()
    assert set(entries) == {("deposit", "root", "committee round 1"),
                            ("deposit", "root", "top-up for the summer school"),
                            ("adjustment", "root", "rounding"),
                            ("transfer", "root", "move to the federation pool")}
    listed = client.get("/api/v1/allocations", params={"project": "climate"},
                        headers=member.headers).json()["items"]
    assert [a["id"] for a in listed] == [first["id"], second["id"]]


def test_an_allocation_past_its_end_is_expired(client: TestClient, make_user: MakeUser,
                                               runtime: Runtime) -> None:
    admin = make_user(roles=("admin",))
    create_project(client, admin)
    now = runtime.clock()
    allocation = grant(client, admin, ends_at=(now + timedelta(days=30)).isoformat(),
                       starts_at=(now - timedelta(days=1)).isoformat())
    later = grant(client, admin, starts_at=(now + timedelta(days=10)).isoformat())
    assert (allocation["status"], later["status"]) == ("active", "pending")
    runtime.clock = lambda: now + timedelta(days=31)
    balance = client.get("/api/v1/projects/climate/balance", headers=admin.headers).json()
    assert [a["status"] for a in balance["allocations"]] == ["expired", "active"]
    assert balance["available"] == "1000.000"
    listed = client.get("/api/v1/projects", headers=admin.headers).json()["items"]
    assert next(p for p in listed if p["name"] == "climate")["available"] == "1000.000"


@pytest.mark.parametrize(("over", "field", "says"), [
    ({"amount": "1.0001"}, "amount", "3 decimal places"),
    ({"amount": "lots"}, "amount", "valid decimal"),
    ({"amount": "NaN"}, "amount", "finite"),
    ({"amount": 0}, "amount", "positive number of SU"),
    ({"amount": "-5"}, "amount", "positive number of SU"),
    ({"pool": "nowhere"}, "pool", "No site named 'nowhere'"),
    ({"ends_at": "2099-01-01T00:00:00"}, "ends_at", "timezone"),
    ({"ends_at": "2000-01-01T00:00:00Z"}, "ends_at", "ends after it starts"),
    ({"credit_limit": "-1"}, "credit_limit", "zero or more"),
    ({"reason": "   "}, "reason", "not a valid reason"),
    ({"reason": None}, "reason", "valid string"),
    ({"project": "nope"}, None, "No project named 'nope'"),
    ({"amont": 5}, "amont", "Extra inputs"),
])
def test_bad_grants_are_422_or_404_with_what_to_fix(
        client: TestClient, make_user: MakeUser, over: dict[str, object], field: str | None,
        says: str) -> None:
    admin = make_user(roles=("admin",))
    create_project(client, admin)
    body = {"project": "climate", "pool": "*", "amount": "10", "ends_at": ENDS,
            "reason": "round 1", **over}
    r = client.post("/api/v1/allocations", json=body, headers=admin.headers)
    found = problem(r, 422 if field else 404)
    assert says in found["detail"], found
    if field:
        fields = [e["field"] for e in found.get("errors", [])] or [found.get("field")]
        assert field in fields, found


def test_adjust_and_transfer_refusals(client: TestClient, make_user: MakeUser) -> None:
    admin = make_user(roles=("admin",))
    create_project(client, admin)
    a = grant(client, admin, amount="5")
    over = problem(client.post(f"/api/v1/allocations/{a['id']}:adjust",
                               json={"amount": "-6", "reason": "claw back"},
                               headers=admin.headers), 422)
    assert "has 5.000 SU spendable; it cannot give back 6.000 SU" in over["detail"]
    zero = problem(client.post(f"/api/v1/allocations/{a['id']}:adjust",
                               json={"amount": 0, "reason": "x"}, headers=admin.headers), 422)
    assert zero["field"] == "amount"
    missing = client.post("/api/v1/allocations/999999:adjust",
                          json={"amount": 1, "reason": "x"}, headers=admin.headers)
    assert problem(missing, 404)["detail"] == "No allocation 999999."
    not_a_number = client.post("/api/v1/allocations/abc:suspend", json={"reason": "x"},
                               headers=admin.headers)
    assert problem(not_a_number, 422)["errors"][0]["field"] == "path.allocation_id"
    same = client.post("/api/v1/allocations:transfer",
                       json={"source": a["id"], "target": a["id"], "amount": 1, "reason": "x"},
                       headers=admin.headers)
    assert problem(same, 404)["detail"].startswith("A transfer needs two different")


def test_the_client_keeps_every_field_the_server_sends(client: TestClient,
                                                       make_user: MakeUser) -> None:
    admin = make_user("root", roles=("admin",))
    make_user("bob")
    recording = _Recording(client)
    ends = datetime(2099, 1, 1, tzinfo=UTC)
    with GatewayClient("http://testserver", lambda: admin.token, transport=recording) as gw:
        ids: list[int] = []
        calls: list[tuple[Any, Callable[[], Any]]] = [
            (ProjectOut, lambda: gw.create_project("climate", "runs")),
            (MemberOut, lambda: gw.add_member("climate", "bob", pi=True)),
            (AllocationOut, lambda: gw.grant("climate", "*", Decimal("12.5"), ends, "award",
                                             credit_limit=1)),
            (AllocationOut, lambda: gw.grant("climate", "local", 3, ends, "award")),
            (AllocationList, lambda: {"items": gw.allocations("climate"), "next_cursor": None}),
            (AllocationOut, lambda: gw.adjust(ids[0], "-0.25", "fix")),
            (TransferOut, lambda: gw.transfer(ids[0], ids[1], "1.125", "move")),
            (AllocationOut, lambda: gw.set_allocation_status(ids[1], "suspend", "late")),
            (AllocationOut, lambda: gw.set_allocation_status(ids[1], "resume", "in")),
            (BalanceOut, lambda: gw.balance("climate")),
            (ProjectOut, lambda: gw.project("climate")),
            (ProjectList, lambda: {"items": gw.projects(), "next_cursor": None}),
        ]
        for schema, fetch in calls:
            document = fetch()
            if schema is AllocationOut and len(ids) < 2:
                ids.append(document["id"])
            sent = recording.bodies[-1]
            assert document == parse(schema, json.loads(sent))
            printed = io.StringIO()
            with redirect_stdout(printed):
                print_json(document)
            # What `--json` prints is what the server sent, byte for byte.
            assert printed.getvalue() == json.dumps(json.loads(sent), indent=2,
                                                    ensure_ascii=False) + "\n"
        assert gw.balance("climate")["allocations"][0]["available"] == Decimal("11.125")
        gw.remove_member("climate", "bob")
        assert gw.project("climate")["members"] == []
