"""Who may do what to project A, every role against every projects and allocations
endpoint (and GET /jobs/{id} of a job of project A), on SQLite and PostgreSQL.

Roles: a researcher who is no member, a member of A, A's PI, the PI of another project B,
an auditor and an admin. A stranger (the non-member, B's PI) gets 404 on every read of A,
worded exactly as for a project that does not exist, never a 403 that confirms the name;
an auditor reads everything and gets 403 on every write; members read A's balance.
Administrators' actions are refused (403) to everyone else before anything is looked up,
so that refusal says nothing about what exists either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import MakeUser, TestUser

ROLES = ("nonmember", "member", "pi_a", "pi_b", "auditor", "admin")
ENDS = "2099-01-01T00:00:00Z"


@dataclass
class World:
    """Project A (PI pi_a, member), project B (PI pi_b), two allocations of A, a job of A
    owned by the member; per role, a user it may add to A and a member it may remove."""

    users: dict[str, TestUser]
    allocations: tuple[int, int]
    job: str


Request = tuple[str, str, dict[str, Any] | None]
# endpoint -> (request for a role, expected status per role in ROLES order)
MATRIX: dict[str, tuple[Callable[[World, str], Request], tuple[int, ...]]] = {
    "GET /projects": (
        lambda w, r: ("GET", "/api/v1/projects", None), (200, 200, 200, 200, 200, 200)),
    "POST /projects": (
        lambda w, r: ("POST", "/api/v1/projects", {"name": f"new-{r}"}),
        (403, 403, 403, 403, 403, 201)),
    "GET /projects/A": (
        lambda w, r: ("GET", "/api/v1/projects/alpha", None), (404, 200, 200, 404, 200, 200)),
    "POST /projects/A/members": (
        lambda w, r: ("POST", "/api/v1/projects/alpha/members", {"user": f"add-{r}"}),
        (404, 403, 201, 404, 403, 201)),
    "DELETE /projects/A/members/U": (
        lambda w, r: ("DELETE", f"/api/v1/projects/alpha/members/gone-{r}", None),
        (404, 403, 204, 404, 403, 204)),
    "GET /projects/A/balance": (
        lambda w, r: ("GET", "/api/v1/projects/alpha/balance", None),
        (404, 200, 200, 404, 200, 200)),
    "GET /allocations?project=A": (
        lambda w, r: ("GET", "/api/v1/allocations?project=alpha", None),
        (404, 200, 200, 404, 200, 200)),
    "POST /allocations (A)": (
        lambda w, r: ("POST", "/api/v1/allocations",
                      {"project": "alpha", "pool": "*", "amount": "5", "ends_at": ENDS,
                       "reason": f"by {r}"}),
        (403, 403, 403, 403, 403, 201)),
    "POST /allocations/{A's}:adjust": (
        lambda w, r: ("POST", f"/api/v1/allocations/{w.allocations[0]}:adjust",
                      {"amount": "1", "reason": f"by {r}"}), (403, 403, 403, 403, 403, 200)),
    "POST /allocations/{none}:adjust": (
        lambda w, r: ("POST", "/api/v1/allocations/999999:adjust",
                      {"amount": "1", "reason": f"by {r}"}), (403, 403, 403, 403, 403, 404)),
    "POST /allocations:transfer (A's)": (
        lambda w, r: ("POST", "/api/v1/allocations:transfer",
                      {"source": w.allocations[0], "target": w.allocations[1], "amount": "1",
                       "reason": f"by {r}"}), (403, 403, 403, 403, 403, 200)),
    "POST /allocations/{A's}:suspend": (
        lambda w, r: ("POST", f"/api/v1/allocations/{w.allocations[1]}:suspend",
                      {"reason": f"by {r}"}), (403, 403, 403, 403, 403, 200)),
    "POST /allocations/{A's}:resume": (
        lambda w, r: ("POST", f"/api/v1/allocations/{w.allocations[1]}:resume",
                      {"reason": f"by {r}"}), (403, 403, 403, 403, 403, 200)),
    # A job's record is its owner's, its project's PI's (issue 31), auditors' and admins';
    # its files only its owner's and theirs (tests/api/test_pi_reads.py).
    "GET /jobs/{A's job}": (
        lambda w, r: ("GET", f"/api/v1/jobs/{w.job}", None), (404, 200, 200, 404, 200, 200)),
}
READS = [name for name in MATRIX if name.startswith("GET")]


def _ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json()


def build_world(client: TestClient, make_user: MakeUser) -> World:
    users = {role: make_user(role.replace("_", "-"), roles=roles) for role, roles in (
        ("nonmember", ("researcher",)), ("member", ("researcher",)), ("pi_a", ("researcher",)),
        ("pi_b", ("researcher",)), ("auditor", ("auditor",)), ("admin", ("admin",)))}
    admin = users["admin"].headers
    for name, pi in (("alpha", "pi-a"), ("beta", "pi-b")):
        _ok(client.post("/api/v1/projects", json={"name": name}, headers=admin))
        _ok(client.post(f"/api/v1/projects/{name}/members", json={"user": pi, "pi": True},
                        headers=admin))
    _ok(client.post("/api/v1/projects/alpha/members", json={"user": "member"}, headers=admin))
    for role in ROLES:
        make_user(f"add-{role}")
        make_user(f"gone-{role}")
        _ok(client.post("/api/v1/projects/alpha/members", json={"user": f"gone-{role}"},
                        headers=admin))
    ids = tuple(_ok(client.post("/api/v1/allocations", json={
        "project": "alpha", "pool": "*", "amount": "100", "ends_at": ENDS, "reason": "award"},
        headers=admin))["id"] for _ in range(2))
    job = client.post("/api/v1/jobs", json={"name": "a", "executable": "/bin/true",
                                            "project": "alpha"}, headers=users["member"].headers)
    assert job.status_code == 202, job.text
    return World(users, (ids[0], ids[1]), job.json()["id"])


def test_every_role_against_every_endpoint_of_project_a(
        client: TestClient, make_user: MakeUser) -> None:
    world = build_world(client, make_user)
    observed: dict[str, tuple[int, ...]] = {}
    for name, (request_for, _) in MATRIX.items():
        statuses = []
        for role in ROLES:
            method, path, body = request_for(world, role)
            response = client.request(method, path, json=body,
                                       headers=world.users[role].headers)
            statuses.append(response.status_code)
        observed[name] = tuple(statuses)
    expected = {name: statuses for name, (_, statuses) in MATRIX.items()}
    assert observed == expected


def test_a_stranger_cannot_tell_project_a_from_no_project(
        client: TestClient, make_user: MakeUser) -> None:
    world = build_world(client, make_user)
    for role in ("nonmember", "pi_b"):
        headers = world.users[role].headers
        for path in ("", "/balance"):
            seen = client.get(f"/api/v1/projects/alpha{path}", headers=headers)
            missing = client.get(f"/api/v1/projects/nosuch{path}", headers=headers)
            assert seen.status_code == missing.status_code == 404
            assert seen.json()["detail"].replace("alpha", "X") == \
                missing.json()["detail"].replace("nosuch", "X")
        add = client.post("/api/v1/projects/alpha/members", json={"user": "add-nonmember"},
                          headers=headers)
        add_missing = client.post("/api/v1/projects/nosuch/members",
                                  json={"user": "add-nonmember"}, headers=headers)
        assert add.status_code == add_missing.status_code == 404
        # Lists show nothing of A either.
        names = [p["name"] for p in client.get("/api/v1/projects", headers=headers).json()["items"]]
        assert "alpha" not in names
        listed = client.get("/api/v1/allocations", headers=headers).json()["items"]
        assert all(a["project"] != "alpha" for a in listed)


def test_auditor_reads_everything_admin_and_members_see_the_balance(
        client: TestClient, make_user: MakeUser) -> None:
    world = build_world(client, make_user)
    auditor = world.users["auditor"].headers
    names = {p["name"]: p["standing"]
             for p in client.get("/api/v1/projects", headers=auditor).json()["items"]}
    assert names["alpha"] == names["beta"] == "auditor"
    everything = client.get("/api/v1/allocations", headers=auditor).json()["items"]
    assert sorted(a["id"] for a in everything) == sorted(world.allocations)
    balance = client.get("/api/v1/projects/alpha/balance",
                         headers=world.users["member"].headers).json()
    assert [a["awarded"] for a in balance["allocations"]] == ["100.000", "100.000"]
    standing = client.get("/api/v1/projects/alpha", headers=world.users["pi_a"].headers).json()
    assert standing["standing"] == "pi"
