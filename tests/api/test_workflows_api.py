"""/api/v1/workflows (issue 16), on SQLite and PostgreSQL: what is refused (every problem
named with where it is), the limits, Idempotency-Key, who sees what, paging, the schema.
A workflow's run: tests/worker/test_workflows.py."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.worker.test_workflows import sh, submit

TWO = {"name": "two", "steps": {
    "a": {"job": sh("echo hi > a.txt", outputs=["a.txt"])},
    "b": {"inputs": [{"from": "a:outputs/a.txt", "dest": "a.txt"}], "job": sh("cat a.txt")},
}}


def refused(client: TestClient, headers: dict[str, str], spec: Any,
            status: int = 422) -> dict[str, Any]:
    r = client.post("/api/v1/workflows", json=spec, headers=headers)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = r.json()
    return problem


def nothing_stored(client: TestClient, headers: dict[str, str]) -> None:
    assert client.get("/api/v1/workflows", headers=headers).json()["items"] == []
    assert client.get("/api/v1/jobs", headers=headers).json()["items"] == []


def test_problems_are_named_with_where_they_are(client: TestClient,
                                                make_user: MakeUser) -> None:
    user = make_user()
    cases = [
        ({"a": {"needs": ["b"], "job": sh("true")}, "b": {"needs": ["a"], "job": sh("true")}},
         "steps.a", "cycle", "these steps wait for each other"),
        ({"a": {"needs": ["solv"], "job": sh("true")}, "solve": {"job": sh("true")}},
         "steps.a.needs[0]", "unknown_step", "there is no step solv: did you mean solve?"),
        ({"a": {"job": sh("true", outputs=["x.txt"])},
          "b": {"inputs": [{"from": "a:outputs/y.txt", "dest": "y"}], "job": sh("true")}},
         "steps.b.inputs[0].from", "data_edge", "no output of a matches 'y.txt'"),
        ({"a": {"job": sh("true")},
          "b": {"inputs": [{"from": "a:output/y.txt", "dest": "y"}], "job": sh("true")}},
         "steps.b.inputs[0].from", "data_edge", "write STEP:outputs/PATH"),
        ({"a": {"job": sh("true", depends_on=[])}}, "steps.a.job.depends_on", "job",
         "use the step's `needs`"),
        ({"a": {"job": {"name": "x", "executable": "/bin/true", "walltime": "forever",
                        "site": "local"}}},
         "steps.a.job.walltime", "job", ""),
    ]
    for steps, field, kind, words in cases:
        problem = refused(client, user.headers, {"name": "bad", "steps": steps})
        errors = {e["field"]: e for e in problem["errors"]}
        assert field in errors, (steps, problem)
        assert errors[field]["kind"] == kind and words in errors[field]["message"], problem
        assert words in problem["detail"]
    nothing_stored(client, user.headers)


def test_a_bad_job_in_a_late_step_stores_nothing(client: TestClient,
                                                 make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "late", "steps": {
        "first": {"job": sh("true")},
        "sweep": {"needs": ["first"], "matrix": {"n": [1, 2]},
                  "job": sh("true", name="s-${{ matrix.n }}", site="nowhere")}}}
    r = client.post("/api/v1/workflows", json=spec, headers=user.headers)
    assert r.status_code in (404, 422), r.text
    nothing_stored(client, user.headers)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"workflow_max_steps": 3, "workflow_max_instances": 4})


def test_limits_are_413_naming_the_setting(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    many = {"name": "many", "steps": {f"s{i}": {"job": sh("true")} for i in range(4)}}
    problem = refused(client, user.headers, many, 413)
    assert (problem["limit"], problem["limit_value"], problem["excess"]) == (
        "GRIDGATE_WORKFLOW_MAX_STEPS", 3, 1)
    wide = {"name": "wide", "steps": {"s": {"matrix": {"n": [1, 2, 3, 4, 5]},
                                            "job": sh("true")}}}
    problem = refused(client, user.headers, wide, 413)
    assert problem["limit"] == "GRIDGATE_WORKFLOW_MAX_INSTANCES"
    assert "split" in problem["detail"] or "sweep fewer" in problem["detail"]
    nothing_stored(client, user.headers)


def test_idempotency_key_replays_the_first_workflow(client: TestClient,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    first = submit(client, user.headers, TWO, **{"Idempotency-Key": "k1"})
    r = client.post("/api/v1/workflows", json=TWO,
                    headers={**user.headers, "Idempotency-Key": "k1"})
    assert r.status_code == 202 and r.headers["Idempotent-Replayed"] == "true"
    assert r.json()["id"] == first["id"]
    assert len(client.get("/api/v1/jobs", headers=user.headers).json()["items"]) == 2
    other = {**TWO, "name": "changed"}
    r = client.post("/api/v1/workflows", json=other,
                    headers={**user.headers, "Idempotency-Key": "k1"})
    assert r.status_code == 422 and "different workflow" in r.json()["detail"]


def test_nobody_sees_another_users_workflow(client: TestClient,
                                            make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    mine = submit(client, alice.headers, TWO)
    for path in (f"/api/v1/workflows/{mine['id']}", f"/api/v1/workflows/{mine['id']}/events"):
        assert client.get(path, headers=bob.headers).status_code == 404
    assert client.post(f"/api/v1/workflows/{mine['id']}/cancel",
                       headers=bob.headers).status_code == 404
    assert client.get("/api/v1/workflows", headers=bob.headers).json()["items"] == []
    assert client.get("/api/v1/workflows/not-an-id", headers=bob.headers).status_code == 404
    assert client.get(f"/api/v1/workflows/{mine['id']}",
                      headers=alice.headers).status_code == 200


def test_lists_page_with_a_cursor(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    ids = [submit(client, user.headers, {**TWO, "name": f"w{i}"})["id"] for i in range(3)]
    first = client.get("/api/v1/workflows?limit=2", headers=user.headers).json()
    assert [w["id"] for w in first["items"]] == ids[::-1][:2]
    assert first["items"][0]["step_states"] == {"running": 1, "pending": 1}
    assert first["items"][0]["steps"] is None
    rest = client.get(f"/api/v1/workflows?limit=2&cursor={first['next_cursor']}",
                      headers=user.headers).json()
    assert [w["id"] for w in rest["items"]] == ids[:1] and rest["next_cursor"] is None
    running = client.get("/api/v1/workflows?state=completed", headers=user.headers).json()
    assert running["items"] == []


def test_the_schema_is_served(client: TestClient, runtime: Runtime) -> None:
    schema = client.get("/api/v1/workflows/schema").json()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["Step"]["properties"]["job"]["$ref"] == "#/$defs/JobSpec"
    assert "executable" in schema["$defs"]["JobSpec"]["properties"]
