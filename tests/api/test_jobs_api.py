"""The jobs REST API on SQLite and PostgreSQL (the worker is not running here)."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from tests.conftest import MakeUser

SPEC = {"name": "hello", "executable": "/bin/echo", "args": ["hi"], "labels": {"exp": "a"}}


def submit(client: TestClient, headers: dict[str, str], **over: object) -> dict[str, object]:
    r = client.post("/api/v1/jobs", json={**SPEC, **over}, headers=headers)
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/api/v1/jobs/{r.json()['id']}"
    body: dict[str, object] = r.json()
    return body


def test_submit_show_list(client: TestClient, make_user: MakeUser) -> None:
    alice = make_user("alice")
    job = submit(client, alice.headers)
    # Issue 12: a `site: auto` job is accepted with no site; a routing pass places it.
    assert job["state"] == "ACCEPTED" and job["site"] is None and job["owner"] == "alice"
    assert submit(client, alice.headers, site="local")["site"] == "local"
    assert job["project"] == "~alice" and job["labels"] == {"exp": "a"}
    shown = client.get(f"/api/v1/jobs/{job['id']}", headers=alice.headers).json()
    assert shown["id"] == job["id"] and shown["attempts"] == []
    listed = client.get("/api/v1/jobs", headers=alice.headers).json()
    assert [j["id"] for j in listed["items"]][1:] == [job["id"]]
    events = client.get(f"/api/v1/jobs/{job['id']}/events", headers=alice.headers).json()
    assert [(e["from_state"], e["to_state"], e["actor"]) for e in events["items"]] == [
        (None, "ACCEPTED", "alice")]


def test_list_filters_and_cursor_pagination(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    ids = [submit(client, user.headers, labels={"n": str(i % 2)})["id"] for i in range(7)]
    seen, cursor = [], None
    while True:
        params: dict[str, str | int] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/v1/jobs", params=params, headers=user.headers).json()
        seen += [j["id"] for j in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(ids)), "newest first, every job exactly once"
    odd = client.get("/api/v1/jobs", params={"label": "n=1"}, headers=user.headers).json()
    assert {j["id"] for j in odd["items"]} == {ids[1], ids[3], ids[5]}
    assert client.get("/api/v1/jobs", params={"state": "RUNNING"},
                      headers=user.headers).json()["items"] == []
    assert len(client.get("/api/v1/jobs", params={"project": f"~{user.principal.username}"},
                          headers=user.headers).json()["items"]) == 7
    bad = client.get("/api/v1/jobs", params={"cursor": "garbage"}, headers=user.headers)
    assert bad.status_code == 422 and "cursor" in bad.json()["detail"]


def test_idempotency_key(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    key = {"Idempotency-Key": str(uuid.uuid4()), **user.headers}
    first = client.post("/api/v1/jobs", json=SPEC, headers=key)
    again = client.post("/api/v1/jobs", json=SPEC, headers=key)
    assert first.status_code == again.status_code == 202
    assert first.json()["id"] == again.json()["id"]
    assert again.headers["idempotent-replayed"] == "true"
    other = client.post("/api/v1/jobs", json={**SPEC, "name": "different"}, headers=key)
    assert other.status_code == 422
    assert "Idempotency-Key" in other.json()["detail"]
    listed = client.get("/api/v1/jobs", headers=user.headers).json()["items"]
    assert len(listed) == 1


def test_other_users_jobs_are_404_on_every_verb(client: TestClient, make_user: MakeUser
                                                ) -> None:
    alice, bob = make_user(), make_user()
    job_id = submit(client, alice.headers)["id"]
    for method, path in [("GET", ""), ("POST", "/cancel"), ("GET", "/events"),
                         ("GET", "/logs/stdout"), ("GET", "/logs/stderr")]:
        r = client.request(method, f"/api/v1/jobs/{job_id}{path}", headers=bob.headers)
        assert r.status_code == 404, (method, path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
    assert client.get("/api/v1/jobs", headers=bob.headers).json()["items"] == []
    # and the job is untouched
    assert client.get(f"/api/v1/jobs/{job_id}", headers=alice.headers).json()["state"] == (
        "ACCEPTED")


def test_auditor_reads_everything_but_cannot_cancel(client: TestClient, make_user: MakeUser
                                                    ) -> None:
    alice, auditor = make_user(), make_user(roles=("auditor",))
    job_id = submit(client, alice.headers)["id"]
    assert client.get(f"/api/v1/jobs/{job_id}", headers=auditor.headers).status_code == 200
    r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=auditor.headers)
    assert r.status_code == 403


def test_cancel_accepted_job_is_immediate(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user.headers)["id"]
    r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 202 and r.json()["state"] == "CANCELLED"
    again = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert again.status_code == 409 and "already CANCELLED" in again.json()["detail"]


def test_bad_input_names_the_field(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    cases = [
        ({"environment": {"LD_PRELOAD": "/x.so"}}, "environment"),
        ({"environment": {"BAD-NAME": "1"}}, "environment"),
        ({"colour": "red"}, "colour"),
        ({"resources": {"walltime": -10}}, "resources.walltime"),
        ({"resources": {"ranks": 4096}}, "resources"),
        ({"resources": {"nodes": 3, "ranks": 3}}, "resources"),
        ({"site": "nowhere"}, "site"),
        ({"project": "not-mine"}, "project"),
    ]
    for over, field in cases:
        r = client.post("/api/v1/jobs", json={**SPEC, **over}, headers=user.headers)
        assert r.status_code == 422, (over, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["status"] == 422 and body["title"]
        fields = [e["field"] for e in body.get("errors", [])] + [body.get("field")]
        assert field in fields, (over, body)
    assert client.get("/api/v1/jobs", headers=user.headers).json()["items"] == []


@pytest.mark.parametrize(("name", "becomes"), [
    ("APPTAINERENV_LD_PRELOAD", "LD_PRELOAD"), ("SINGULARITYENV_LD_PRELOAD", "LD_PRELOAD"),
    ("APPTAINERENV_BASH_ENV", "BASH_ENV"), ("APPTAINERENV_SINGULARITYENV_LD_PRELOAD",
                                            "LD_PRELOAD")])
@pytest.mark.parametrize("where", ["environment", "container.environment"])
def test_a_container_runtimes_prefix_does_not_pass_the_deny_list(
        client: TestClient, make_user: MakeUser, name: str, becomes: str, where: str) -> None:
    # Issue 25 item 3: Apptainer and SingularityCE strip these prefixes and set the rest
    # inside the container; they were accepted (202).
    user = make_user()
    container: dict[str, object] = {"image": "docker://ghcr.io/lab/app:1.0"}
    env = {name: "/tmp/x.so"}
    over = ({"environment": env, "container": container} if where == "environment" else
            {"container": {**container, "environment": env}})
    r = client.post("/api/v1/jobs", json={**SPEC, "args": [], **over}, headers=user.headers)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    [error] = r.json()["errors"]
    assert error["field"] == where
    assert error["message"] == (
        f"environment name {name!r} is not allowed: a container runtime sets it as "
        f"{becomes} inside the container, and {becomes} changes how the loader or a shell "
        "starts a program, before the program itself runs")


@pytest.mark.parametrize("env", [{"LD_PRELOAD": "/tmp/x.so"}, {"APPTAINER_BIND": "/etc:/x"},
                                 {"SINGULARITYENV_SLURM_JOB_ID": "1"}])
def test_what_ch_run_and_apptainer_read_themselves_is_refused(
        client: TestClient, make_user: MakeUser, env: dict[str, str]) -> None:
    # ch-run passes the environment through under its own names; APPTAINER_* options
    # would rewrite the launch line; a reserved name stays reserved behind a prefix.
    user = make_user()
    container = {"image": "docker://ghcr.io/lab/app:1.0", "runtime": "charliecloud",
                 "environment": env}
    r = client.post("/api/v1/jobs", json={**SPEC, "args": [], "container": container},
                    headers=user.headers)
    assert r.status_code == 422, r.text
    [error] = r.json()["errors"]
    assert error["field"] == "container.environment"
    assert f"environment name {next(iter(env))!r}" in error["message"]


def test_infeasible_job_says_why(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    r = client.post("/api/v1/jobs", json={**SPEC, "resources": {"ranks": 100000}},
                    headers=user.headers)
    assert r.status_code == 422
    assert "cores" in r.json()["detail"]


def test_huge_body_is_413(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    body = '{"name": "' + "x" * (10 * 1024 * 1024) + '"}'
    r = client.post("/api/v1/jobs", content=body,
                    headers={**user.headers, "content-type": "application/json"})
    assert r.status_code == 413
    assert "limit" in r.json()["detail"]


def test_unauthenticated_and_wrong_scope(client: TestClient, make_user: MakeUser) -> None:
    r = client.get("/api/v1/jobs")
    assert r.status_code == 401 and "gridgate login" in r.json()["detail"]
    assert r.headers["www-authenticate"].startswith("Bearer")
    reader = make_user(scope="jobs:read")
    r = client.post("/api/v1/jobs", json=SPEC, headers=reader.headers)
    assert r.status_code == 403 and "jobs:write" in r.json()["detail"]


def test_health_metrics_schema_sites(client: TestClient, make_user: MakeUser) -> None:
    assert client.get("/api/v1/health").json()["database"] == "ok"
    assert client.get("/health").status_code == 200
    schema = client.get("/api/v1/schemas/job-spec").json()
    assert schema["additionalProperties"] is False
    user = make_user()
    submit(client, user.headers, site="local")
    submit(client, user.headers)  # site: auto, not routed yet (no worker here)
    metrics = client.get("/metrics").text
    assert 'gridgate_jobs{site="local",state="ACCEPTED"} 1.0' in metrics
    assert 'gridgate_jobs{site="",state="ACCEPTED"} 1.0' in metrics
    assert "gridgate_http_requests_total" in metrics
    sites = client.get("/api/v1/sites", headers=user.headers).json()["items"]
    assert [s["name"] for s in sites] == ["local"] and sites[0]["enabled"]
    assert client.get("/openapi.json").json()["paths"]["/api/v1/jobs"]
