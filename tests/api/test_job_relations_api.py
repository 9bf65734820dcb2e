"""`depends_on` and `array` at submit, and /job-arrays (issue 16), on SQLite and PostgreSQL:
what is refused (each a problem naming the field), what is stored, and who may see or
cancel an array. The worker's side: tests/worker/test_dependencies.py, test_job_arrays.py."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from tests.conftest import MakeUser
from tests.worker.test_dependencies import after, sh
from tests.worker.test_worker_local import post

MISSING = "d3eca39f-5b1e-4c5e-9a0e-0c1f2a3b4c5d"


def refused(client: TestClient, headers: dict[str, str], spec: dict[str, Any],
            status: int = 422) -> dict[str, Any]:
    r = client.post("/api/v1/jobs", json=spec, headers=headers)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = r.json()
    return problem


def test_a_dependency_on_a_job_you_cannot_see_is_refused(client: TestClient,
                                                         make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    theirs = post(client, bob.headers, sh("theirs", "true"))
    bobs_array = client.post("/api/v1/jobs", headers=bob.headers,
                             json=sh("arr", "true", array="0-1")).json()["array_job_id"]
    mine = post(client, alice.headers, sh("mine", "true"))
    for other in (theirs, bobs_array, MISSING):
        problem = refused(client, alice.headers, sh(
            "x", "true", depends_on=[*after("afterok", mine), *after("afterany", other)]))
        assert problem["field"] == "depends_on[1].job"
        assert problem["detail"] == (f"depends_on[1].job: you have no job or job array "
                                     f"{other}.")
    ok = client.post("/api/v1/jobs", headers=bob.headers, json=sh(
        "y", "true", depends_on=after("afterok", theirs, bobs_array)))
    assert ok.status_code == 202 and ok.json()["spec"]["depends_on"] == [
        {"job": theirs, "when": "afterok"}, {"job": bobs_array, "when": "afterok"}]
    # An administrator sees every job, so may wait for any.
    admin = make_user(roles=("admin",))
    assert client.post("/api/v1/jobs", headers=admin.headers, json=sh(
        "z", "true", depends_on=after("afterany", theirs))).status_code == 202


def test_malformed_relations_are_refused_naming_the_field(client: TestClient,
                                                          make_user: MakeUser) -> None:
    user = make_user()
    cases = [
        ({"array": "9-0"}, "array", "runs backwards: write 0-9"),
        ({"array": "0-9%0"}, "array", "lets 0 tasks run at once"),
        ({"array": ""}, "array", "at least 1 character"),
        ({"array": "0-20000"}, "array", "above the gateway's limit of 10000"),
        ({"depends_on": [{"job": MISSING[:8], "when": "afterok"}]}, "depends_on[0].job",
         "not a valid job id"),
        ({"depends_on": [{"job": MISSING, "when": "after"}]}, "depends_on[0].when",
         "afterok"),
        ({"depends_on": [*after("afterok", MISSING), *after("afternotok", MISSING)]},
         "depends_on", "can never both happen"),
    ]
    for extra, field, words in cases:
        problem = refused(client, user.headers, sh("bad", "true", **extra))
        fields = {e["field"]: e["message"] for e in problem["errors"]}
        assert field in fields and words in fields[field], (extra, problem)


def test_an_array_over_the_configured_limit_is_413(client: TestClient, runtime: Runtime,
                                                   make_user: MakeUser) -> None:
    user = make_user()
    limit = runtime.settings.job_array_max_tasks
    problem = refused(client, user.headers, sh("big", "true", array=f"0-{limit}"), 413)
    assert (problem["field"], problem["limit"], problem["limit_value"], problem["excess"]) == (
        "array", "GRIDGATE_JOB_ARRAY_MAX_TASKS", limit, 1)
    assert client.get("/api/v1/job-arrays", headers=user.headers).json()["items"] == []


def test_an_array_is_one_record_and_its_tasks(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    spec = sh("sweep", "true", array="1,3,5-7%2", labels={"k": "v"})
    r = client.post("/api/v1/jobs", json=spec, headers={**user.headers,
                                                       "Idempotency-Key": "sweep-1"})
    assert r.status_code == 202, r.text
    first = r.json()
    array_id = first["array_job_id"]
    assert r.headers["location"] == f"/api/v1/jobs/{first['id']}"
    replay = client.post("/api/v1/jobs", json=spec, headers={**user.headers,
                                                            "Idempotency-Key": "sweep-1"})
    assert replay.json()["id"] == first["id"] and replay.headers["idempotent-replayed"]
    listed = client.get("/api/v1/jobs", params={"array_job_id": array_id},
                        headers=user.headers).json()["items"]
    assert sorted(j["array_index"] for j in listed) == [1, 3, 5, 6, 7]
    assert {(j["name"], j["state"], j["labels"]["k"]) for j in listed} == {
        ("sweep", "ACCEPTED", "v")}
    one = client.get("/api/v1/jobs", params={"array_job_id": array_id, "array_index": 6},
                     headers=user.headers).json()["items"]
    assert [j["array_index"] for j in one] == [6]
    arrays = client.get("/api/v1/job-arrays", headers=user.headers).json()["items"]
    assert [(a["id"], a["name"], a["array"], a["task_count"], a["throttle"],
             a["task_states"]) for a in arrays] == [
        (array_id, "sweep", "1,3,5-7%2", 5, 2, {"ACCEPTED": 5})]
    by_prefix = client.get("/api/v1/job-arrays", params={"id_prefix": array_id[:8]},
                           headers=user.headers).json()["items"]
    assert [a["id"] for a in by_prefix] == [array_id]
    events = client.get(f"/api/v1/jobs/{listed[-1]['id']}/events",
                        headers=user.headers).json()["items"]
    assert events[0]["reason"].startswith(f"task {listed[-1]['array_index']} of job array "
                                          f"{array_id}: accepted")


def test_job_arrays_follow_the_job_rules_for_other_users(client: TestClient,
                                                         make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    auditor = make_user(roles=("auditor",))
    array_id = client.post("/api/v1/jobs", headers=alice.headers,
                           json=sh("a", "true", array="0-2")).json()["array_job_id"]
    for method, path in (("GET", ""), ("POST", "/cancel")):
        r = client.request(method, f"/api/v1/job-arrays/{array_id}{path}", headers=bob.headers)
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    assert client.get("/api/v1/job-arrays", headers=bob.headers).json()["items"] == []
    assert client.get("/api/v1/jobs", params={"array_job_id": array_id},
                      headers=bob.headers).json()["items"] == []
    assert client.get(f"/api/v1/job-arrays/{array_id}", headers=auditor.headers).status_code \
        == 200
    assert client.post(f"/api/v1/job-arrays/{array_id}/cancel",
                       headers=auditor.headers).status_code == 403
    cancelled = client.post(f"/api/v1/job-arrays/{array_id}/cancel", headers=alice.headers)
    assert cancelled.status_code == 202 and cancelled.json()["task_states"] == {"CANCELLED": 3}
    for bad in ("D3ECA39F", "x", "0" * 37):
        assert client.get("/api/v1/job-arrays", params={"id_prefix": bad},
                          headers=alice.headers).status_code == 422
    assert client.get("/api/v1/job-arrays/not-an-id", headers=alice.headers).status_code == 404
