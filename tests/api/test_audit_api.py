"""The audit API (SQLite and PostgreSQL): GET /audit/verify, the signed tree heads and
consistency proofs for auditors and admins only, and GET /audit/jobs/{id}, one job's story
from request to charge with the bank on, with every entry's inclusion proof checked as an
outside party would (the published key, RFC 9162's algorithm), for its owner, its
project's PI, auditors and admins (404 for anyone else)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from joserfc import jws
from joserfc.jwk import KeySet
from sqlalchemy import select

from gateway.accounting.merkle import leaf_hash, verify_consistency, verify_inclusion
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Membership, Project
from gateway.runtime import Runtime
from gateway.services.money import allocations
from gateway.services.money.allocations import Grant
from gateway.settings import Settings
from gateway.worker.loop import Worker
from gateway.worker.periodic.audit_sequencer import take_in
from tests.conftest import MakeUser, TestUser
from tests.staging.helpers import run_until


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The bank on: a submit holds a lien for the job's quote."""
    return settings.model_copy(update={"allocations_enforced": True})


def _grant(runtime: Runtime, project: str, su: int = 1000) -> int:
    now = utcnow()
    with transaction(runtime.sessions) as s:
        return allocations.grant(s, Grant(project, "*", su * 1000, now - timedelta(days=1),
                                          now + timedelta(days=365)), {"local"}, "committee",
                                 "award for the audit test", now).id


def personal(runtime: Runtime, user: TestUser) -> str:
    """The name of the user's personal project."""
    with runtime.sessions() as s:
        name = s.scalar(select(Project.name).where(
            Project.personal_owner_id == user.principal.user_id))
    assert name is not None
    return name


def _join(runtime: Runtime, project: str, user: TestUser, role: str) -> None:
    with transaction(runtime.sessions) as s:
        project_id = s.scalar(select(Project.id).where(Project.name == project))
        s.add(Membership(project_id=project_id, user_id=user.principal.user_id, role=role))


def story(client: TestClient, user: TestUser, job_id: str, status: int = 200
          ) -> dict[str, Any]:
    r = client.get(f"/api/v1/audit/jobs/{job_id}", headers=user.headers)
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_job_story_from_request_to_charge(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    owner = make_user()
    name = personal(runtime, owner)
    allocation = _grant(runtime, name)
    # Two seconds of run: a charge above nothing (the local site's record has whole seconds).
    r = client.post("/api/v1/jobs", json={"name": "told", "executable": "/bin/sleep",
                                          "args": ["2"]}, headers=owner.headers)
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    worker = Worker(runtime)
    run_until(worker, client, owner, job_id)
    told = story(client, owner, job_id)
    for _ in range(20):  # the worker settles a finished job on a later cycle
        if told["usage"]:
            break
        worker.run_once()
        told = story(client, owner, job_id)
    assert (told["job_id"], told["project"], told["requested_by"]) == (
        job_id, name, owner.principal.username)
    assert told["owner"]["subject"] == owner.principal.subject
    assert told["owner"]["issuer"] == owner.principal.issuer
    [lien, *_] = told["liens"]
    assert lien["allocation_id"] == allocation and lien["amount_milli"] > 0
    assert told["placements"] and told["placements"][0]["chosen"] == ["local"]
    [attempt] = told["attempts"]
    assert attempt["site"] == "local" and attempt["native_id"]
    states = [e["to_state"] for e in told["events"] if e["from_state"] != e["to_state"]]
    assert states[0] == "ACCEPTED" and states[-1] == "COMPLETED"
    [usage] = told["usage"]
    assert usage["site"] == "local" and usage["native_id"] == attempt["native_id"]
    assert usage["charged_milli"] and usage["charged_milli"] > 0
    charged = sum(leg["amount_milli"] for leg in told["ledger"]
                  if leg["kind"] == "charge" and leg["account"] == "used")
    assert charged == usage["charged_milli"]
    assert {leg["kind"] for leg in told["ledger"]} == {"charge"}  # liens: not the ledger's
    assert lien["status"] == "settled"
    kinds = [link["kind"] for link in told["audit"]]
    assert kinds[0] == "job.state" and "routing.decision" in kinds
    assert kinds.count("job.state") == len(told["events"])
    assert [k for k in kinds if k in ("lien", "charge", "release")] == [
        "lien", "charge", "release"]
    take_in(runtime, every=0)
    proven = story(client, owner, job_id)
    head = proven["tree_head"]
    assert head is not None and head_is_signed(client, head)
    for item in proven["audit"]:
        # What an outside party checks: the entry's text is in the tree the gateway signed.
        assert json.loads(item["entry"])["kind"] in kinds
        assert verify_inclusion(leaf_hash(item["entry"].encode()), item["leaf"], head["size"],
                                [bytes.fromhex(p) for p in item["proof"]],
                                bytes.fromhex(head["root"]))


def head_is_signed(client: TestClient, head: dict[str, Any]) -> bool:
    """The head's signature checked with the gateway's published key only."""
    keys = KeySet.import_key_set(client.get("/.well-known/jwks.json").json())
    token = jws.deserialize_compact(head["signature"], keys, algorithms=["RS256"])
    claims = json.loads(token.payload or b"{}")
    return bool(token.headers()["typ"] == "gridgate-tree-head+jwt" and claims == {
        "size": head["size"], "root": head["root"], "at": claims["at"]}
        and claims["at"].startswith(head["at"][:19]))


def test_tree_heads_and_consistency_proofs(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    auditor = make_user(roles=("auditor",))
    researcher = make_user()
    assert client.get("/api/v1/audit/tree-heads/latest",
                      headers=auditor.headers).status_code == 404
    _grant(runtime, personal(runtime, researcher))
    take_in(runtime, every=0)
    first = client.get("/api/v1/audit/tree-heads/latest", headers=auditor.headers).json()
    _grant(runtime, personal(runtime, researcher), su=5)
    take_in(runtime, every=0)
    second = client.get("/api/v1/audit/tree-heads/latest", headers=auditor.headers).json()
    assert first["size"] < second["size"] and head_is_signed(client, second)
    assert client.get(f"/api/v1/audit/tree-heads/{first['size']}",
                      headers=auditor.headers).json() == first
    r = client.get("/api/v1/audit/consistency", headers=auditor.headers,
                   params={"first": first["size"], "second": second["size"]})
    assert r.status_code == 200, r.text
    path = [bytes.fromhex(h) for h in r.json()["proof"]]
    assert verify_consistency(first["size"], second["size"], bytes.fromhex(first["root"]),
                              bytes.fromhex(second["root"]), path)
    for params, status in (({"first": second["size"], "second": first["size"]}, 422),
                           ({"first": first["size"], "second": second["size"] + 1}, 404),
                           ({"first": 0, "second": 1}, 422)):
        refused = client.get("/api/v1/audit/consistency", params=params,
                             headers=auditor.headers)
        assert refused.status_code == status, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
    for path_ in ("/api/v1/audit/tree-heads/latest",
                  f"/api/v1/audit/consistency?first=1&second={second['size']}"):
        assert client.get(path_, headers=researcher.headers).status_code == 403


def test_who_reads_a_job_story(client: TestClient, runtime: Runtime,
                               make_user: MakeUser) -> None:
    owner = make_user()
    project = personal(runtime, owner)
    _grant(runtime, project)
    job_id = client.post("/api/v1/jobs", json={"name": "s", "executable": "/bin/true"},
                         headers=owner.headers).json()["id"]
    pi, member, stranger = make_user(), make_user(), make_user()
    _join(runtime, project, pi, "manager")
    _join(runtime, project, member, "member")
    readers = (owner, pi, make_user(roles=("auditor",)), make_user(roles=("admin",)))
    for reader in readers:
        assert story(client, reader, job_id)["liens"]
    for outsider in (member, stranger):
        assert story(client, outsider, job_id, 404)["title"] == "Not found"
    story(client, stranger, "not-a-uuid", 404)

    # Issue 28: a short id resolves over the same readers' jobs (GET /audit/jobs), and
    # over nobody else's.
    def named(user: TestUser, prefix: str) -> list[str]:
        r = client.get("/api/v1/audit/jobs", params={"id_prefix": prefix},
                       headers=user.headers)
        assert r.status_code == 200, r.text
        return [j["id"] for j in r.json()["items"]]

    for reader in readers:
        assert named(reader, job_id[:8]) == [job_id]
    for outsider in (member, stranger):
        assert named(outsider, job_id[:8]) == [] and named(outsider, job_id) == []
    (found,) = client.get("/api/v1/audit/jobs", params={"id_prefix": job_id[:8]},
                          headers=pi.headers).json()["items"]
    assert (found["name"], found["project"]) == ("s", project)
    for bad in ("", "D3ECA39F", "d3%", "x"):
        r = client.get("/api/v1/audit/jobs", params={"id_prefix": bad}, headers=pi.headers)
        assert r.status_code == 422, (bad, r.text)


def test_verify_is_for_auditors_and_admins(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    researcher = make_user()
    _grant(runtime, personal(runtime, researcher))
    refused = client.get("/api/v1/audit/verify", headers=researcher.headers)
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert "auditor" in refused.json()["detail"]
    take_in(runtime, every=0)
    for role in ("auditor", "admin"):
        r = client.get("/api/v1/audit/verify", headers=make_user(roles=(role,)).headers)
        assert r.status_code == 200, r.text
        report = r.json()
        assert report["ok"] and report["broken"] is None and report["allocations"] == 1
        assert report["events"] == 2  # the grant and its deposit
        assert report["head"]["size"] == report["events"] and report["pending"] == 0

def test_jobs_to_audit_come_in_pages(client: TestClient, runtime: Runtime,
                                     make_user: MakeUser) -> None:
    owner = make_user()
    _grant(runtime, personal(runtime, owner))
    by_start: dict[str, list[str]] = {}
    # 17 ids: two of them start with the same hex digit (pigeonhole), a list of 2 or more.
    for i in range(17):
        job_id = client.post("/api/v1/jobs", json={"name": f"p{i}", "executable": "/bin/true"},
                             headers=owner.headers).json()["id"]
        by_start.setdefault(job_id[0], []).append(job_id)
    start = max(by_start, key=lambda k: len(by_start[k]))
    whole = client.get("/api/v1/audit/jobs", params={"id_prefix": start, "limit": 100},
                       headers=owner.headers).json()
    assert whole["next_cursor"] is None
    assert sorted(j["id"] for j in whole["items"]) == sorted(by_start[start])
    paged: list[str] = []
    params: dict[str, Any] = {"id_prefix": start, "limit": 1}
    while True:
        page = client.get("/api/v1/audit/jobs", params=params, headers=owner.headers).json()
        assert len(page["items"]) == 1
        paged.append(page["items"][0]["id"])
        if page["next_cursor"] is None:
            break
        params["cursor"] = page["next_cursor"]
    assert paged == [j["id"] for j in whole["items"]]  # newest first, each once
    bad = client.get("/api/v1/audit/jobs", params={"id_prefix": start, "cursor": "bm90"},
                     headers=owner.headers)
    assert bad.status_code == 422
