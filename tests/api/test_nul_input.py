"""A NUL character anywhere in request text is a 422 problem naming the field, on SQLite
and on PostgreSQL (whose text type cannot hold one: these were 500s there)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.settings import Settings
from tests.api.test_jobs_api import SPEC
from tests.conftest import MakeUser

NUL = "\x00"

JOB_BODIES = {
    "labels.team": {"labels": {"team": f"a{NUL}b"}},
    "project": {"project": f"p{NUL}"},
    "name": {"name": f"job{NUL}"},
    "environment.GREETING": {"environment": {"GREETING": f"hi{NUL}"}},
    "args[1]": {"args": ["ok", f"a{NUL}b"]},
}


def _assert_refused(response: Any, field: str) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["field"] == field and body["errors"][0]["field"] == field
    assert "NUL" in body["detail"] and field in body["detail"]


@pytest.mark.parametrize(("field", "over"), JOB_BODIES.items(), ids=JOB_BODIES.keys())
def test_nul_in_a_job_submission(client: TestClient, make_user: MakeUser, field: str,
                                 over: dict[str, Any]) -> None:
    user = make_user()
    _assert_refused(client.post("/api/v1/jobs", json={**SPEC, **over}, headers=user.headers),
                    field)


def test_nul_in_the_idempotency_key(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    r = client.post("/api/v1/jobs", json=SPEC,
                    headers={**user.headers, "Idempotency-Key": f"key{NUL}"})
    _assert_refused(r, "idempotency-key")


@pytest.mark.parametrize("param", [("site", f"local{NUL}"), ("project", f"p{NUL}"),
                                   ("label", f"exp=a{NUL}"), ("label", f"e{NUL}xp=a"),
                                   ("state", f"RUNNING{NUL}"), ("cursor", f"abc{NUL}")],
                         ids=["site", "project", "label value", "label key", "state",
                              "cursor"])
def test_nul_in_a_list_filter(client: TestClient, make_user: MakeUser,
                              param: tuple[str, str]) -> None:
    user = make_user()
    assert client.post("/api/v1/jobs", json=SPEC, headers=user.headers).status_code == 202
    _assert_refused(client.get("/api/v1/jobs", params=[param], headers=user.headers),
                    param[0])


@pytest.mark.parametrize(("path", "field"), [
    ("/api/v1/jobs/%00", "job_id"),
    ("/api/v1/jobs/abc%00def/events", "job_id"),
    ("/api/v1/uploads/%00", "upload_id"),
    ("/api/v1/uploads/x%00y/complete", "upload_id"),
])
def test_nul_in_a_path_id(client: TestClient, make_user: MakeUser, path: str,
                          field: str) -> None:
    user = make_user()
    method = "POST" if path.endswith("/complete") else "GET"
    body = {"sha256": "0" * 64} if method == "POST" else None
    _assert_refused(client.request(method, path, json=body, headers=user.headers), field)


def test_nul_in_an_upload_name(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    r = client.post("/api/v1/uploads", json={"name": f"in{NUL}.dat", "size": 3},
                    headers=user.headers)
    _assert_refused(r, "name")


def test_nul_in_oauth_forms(client: TestClient) -> None:
    form = {"grant_type": "client_credentials", "client_id": f"bot{NUL}",
            "client_secret": "s"}
    _assert_refused(client.post("/oauth/token", data=form), "client_id")
    decision = {"user_code": "BCDF-GHJK", "username": f"alice{NUL}", "password": "p",
                "action": "approve", "csrf_token": "t"}
    _assert_refused(client.post("/oauth/device", data=decision), "username")


def test_text_without_nul_passes_untouched(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    # An escaped backslash before "u0000" is five ordinary characters, not a NUL.
    r = client.post("/api/v1/jobs", json={**SPEC, "args": ["\\u0000"]}, headers=user.headers)
    assert r.status_code == 202, r.text
    assert r.json()["spec"]["args"] == ["\\u0000"]


def test_upload_chunks_are_bytes_not_text(client: TestClient, make_user: MakeUser,
                                          settings: Settings) -> None:
    """A chunk is file content and streams to disk: never buffered nor inspected, even when
    it claims to be JSON and is larger than the body limit."""
    user = make_user()
    data = json.dumps({"x": NUL, "pad": "a" * settings.max_body_bytes}).encode()
    r = client.post("/api/v1/uploads", json={"name": "in.dat", "size": len(data)},
                    headers=user.headers)
    assert r.status_code == 201, r.text
    put = client.put(f"/api/v1/uploads/{r.json()['id']}", content=data,
                     headers={**user.headers, "Content-Type": "application/json",
                              "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}"})
    assert put.status_code == 200, put.text
    assert put.json()["offset"] == len(data)
