"""Every list of the API pages the same way (`limit`, `cursor` -> `{items, next_cursor}`),
and a job is the same document in a list as alone (its attempts included)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.db.engine import transaction
from gateway.db.models import Attempt, JobOutput
from gateway.runtime import Runtime
from tests.conftest import MakeUser, TestUser

SPEC = {"name": "hello", "executable": "/bin/echo", "site": "local"}


def _every_page(client: TestClient, path: str, user: TestUser, limit: int
                ) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        r = client.get(path, params=params, headers=user.headers)
        assert r.status_code == 200, r.text
        pages.append(r.json()["items"])
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return pages


def test_every_list_takes_limit_and_cursor(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    lists = 0
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            ok = op["responses"].get("200", {}).get("content", {}).get("application/json", {})
            ref = ok.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1]
            if "items" not in schemas.get(ref, {}).get("properties", {}):
                continue
            lists += 1
            names = {p["name"] for p in op.get("parameters", [])}
            assert {"limit", "cursor"} <= names, (method, path)
            assert schemas[ref]["required"] == ["items", "next_cursor"], ref
    assert lists >= 7  # jobs, events, files, uploads, sites, projects, allocations


def test_uploads_page_newest_first(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    made = [client.post("/api/v1/uploads", json={"name": f"f{i}", "size": 1},
                        headers=user.headers).json()["id"] for i in range(5)]
    pages = _every_page(client, "/api/v1/uploads", user, 2)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [u["id"] for p in pages for u in p] == \
        [u["id"] for u in client.get("/api/v1/uploads", headers=user.headers).json()["items"]]
    assert sorted(u["id"] for p in pages for u in p) == sorted(made)


def test_events_outputs_and_sites_page(client: TestClient, make_user: MakeUser,
                                     runtime: Runtime) -> None:
    user = make_user()
    job = client.post("/api/v1/jobs", json=SPEC, headers=user.headers).json()
    client.post(f"/api/v1/jobs/{job['id']}/cancel", headers=user.headers)
    events = _every_page(client, f"/api/v1/jobs/{job['id']}/events", user, 1)
    assert [[e["to_state"] for e in p] for p in events] == [["ACCEPTED"], ["CANCELLED"]]
    with transaction(runtime.sessions) as session:
        session.add_all(JobOutput(job_id=job["id"], path=f"out/{i}.txt", size=i,
                                  sha256="0" * 64, location="site", site_name="local",
                                  site_path=f"/tmp/{i}") for i in range(3))
    files = _every_page(client, f"/api/v1/jobs/{job['id']}/outputs", user, 2)
    assert [[f["path"] for f in p] for p in files] == [["out/0.txt", "out/1.txt"],
                                                       ["out/2.txt"]]
    sites = _every_page(client, "/api/v1/sites", user, 1)
    assert all(len(p) == 1 for p in sites) and sites[0][0]["name"] == "local"


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/uploads", "/api/v1/sites",
                                  "/api/v1/projects", "/api/v1/allocations"])
def test_a_forged_cursor_is_refused(client: TestClient, make_user: MakeUser, path: str
                                    ) -> None:
    user = make_user()
    for cursor in ("bm9wZQ", "WyJ4Il0", "W10", "%%%"):
        r = client.get(path, params={"cursor": cursor}, headers=user.headers)
        assert r.status_code == 422, (cursor, r.text)
        problem = r.json()
        fields = [problem.get("field")] + [e["field"] for e in problem.get("errors", [])]
        assert problem["type"] == "/problems/validation"
        assert {"cursor", "query.cursor"} & set(fields), fields
    assert client.get(path, params={"limit": 0}, headers=user.headers).status_code == 422


def test_a_listed_job_is_the_job_shown(client: TestClient, make_user: MakeUser,
                                       runtime: Runtime) -> None:
    user = make_user()
    job = client.post("/api/v1/jobs", json=SPEC, headers=user.headers).json()
    assert job["attempts"] == []
    with transaction(runtime.sessions) as session:
        session.add(Attempt(job_id=job["id"], number=1, site_name="local", tag="t1",
                            state="QUEUED", workdir="/tmp/w"))
    shown = client.get(f"/api/v1/jobs/{job['id']}", headers=user.headers).json()
    listed = client.get("/api/v1/jobs", headers=user.headers).json()["items"]
    assert [a["number"] for a in shown["attempts"]] == [1]
    assert listed == [shown]
    cancelled = client.post(f"/api/v1/jobs/{job['id']}/cancel", headers=user.headers).json()
    assert cancelled["attempts"] == shown["attempts"]
