"""GET /api/v1/jobs?created_after=&created_before=&order=: jobs by when they were
submitted (a time without a zone is UTC), oldest first, and paging by cursor in that
order (what the portal's jobs list filters and sorts by)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from gateway.db.engine import transaction
from gateway.db.models import Job
from gateway.runtime import Runtime
from tests.api.test_jobs_api import submit
from tests.conftest import MakeUser

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def test_list_by_time_and_oldest_first(client: TestClient, runtime: Runtime,
                                       make_user: MakeUser) -> None:
    alice = make_user()
    ids = [str(submit(client, alice.headers, name=f"j{i}")["id"]) for i in range(5)]
    with transaction(runtime.sessions) as session:  # one a day, from T0
        for i, job_id in enumerate(ids):
            session.execute(update(Job).where(Job.id == job_id)
                            .values(created_at=T0 + timedelta(days=i)))

    def names(**params: object) -> list[str]:
        r = client.get("/api/v1/jobs", params=params, headers=alice.headers)
        assert r.status_code == 200, r.text
        return [job["name"] for job in r.json()["items"]]

    assert names() == ["j4", "j3", "j2", "j1", "j0"]
    assert names(order="oldest") == ["j0", "j1", "j2", "j3", "j4"]
    after, before = (T0 + timedelta(days=1)).isoformat(), (T0 + timedelta(days=3)).isoformat()
    assert names(created_after=after, created_before=before) == ["j2", "j1"]
    # Without a zone: UTC. With another zone: the same instant.
    assert names(created_after="2026-06-03T12:00:00") == ["j4", "j3", "j2"]
    assert names(created_after="2026-06-03T14:00:00+02:00") == ["j4", "j3", "j2"]
    # Oldest first, two a page: the cursor goes on in that order.
    first = client.get("/api/v1/jobs", params={"order": "oldest", "limit": 2},
                       headers=alice.headers).json()
    second = client.get("/api/v1/jobs", params={"order": "oldest", "limit": 2,
                                                "cursor": first["next_cursor"]},
                        headers=alice.headers).json()
    assert [j["name"] for j in first["items"] + second["items"]] == ["j0", "j1", "j2", "j3"]
    for bad_time in ("soon", "0.5"):  # a number is no time here (nor seconds since 1970)
        bad = client.get("/api/v1/jobs", params={"created_after": bad_time},
                         headers=alice.headers)
        assert bad.status_code == 422 and "created_after" in bad.text
    bad = client.get("/api/v1/jobs", params={"order": "random"}, headers=alice.headers)
    assert bad.status_code == 422
