"""A project's PI reads its members' jobs (issue 31: the portal's roles): the list, the
record, its history and its events, live; not the jobs of another project, nor a member's
personal ones; and neither its files (log, outputs) nor a change to it (cancel, hold,
release, deleting outputs), which stay its owner's. A member reads none of the PI's jobs.
On SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from gateway.domain.errors import NotFound
from gateway.repositories.events import feed
from gateway.runtime import Runtime
from gateway.schemas.events import JOB_STATE_TYPE
from gateway.services.events.feed import feed_filter
from tests.conftest import MakeUser, TestUser

SPEC = {"name": "shared", "executable": "/bin/true"}


@dataclass
class Team:
    pi: TestUser
    member: TestUser
    outsider_pi: TestUser
    shared_job: str  # the member's, in project alpha
    personal_job: str  # the member's, in their personal project
    other_job: str  # the outsider's, in project beta


def _ok(response: object) -> dict[str, object]:
    status = getattr(response, "status_code", 0)
    assert status in (200, 201, 202), getattr(response, "text", "")
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    return body


@pytest.fixture
def team(client: TestClient, make_user: MakeUser) -> Team:
    admin = make_user(roles=("admin",)).headers
    pi, member, outsider = make_user(), make_user(), make_user()
    for project, lead in (("alpha", pi), ("beta", outsider)):
        _ok(client.post("/api/v1/projects", json={"name": project}, headers=admin))
        _ok(client.post(f"/api/v1/projects/{project}/members",
                        json={"user": lead.principal.username, "pi": True}, headers=admin))
    _ok(client.post("/api/v1/projects/alpha/members",
                    json={"user": member.principal.username}, headers=admin))

    def submit(user: TestUser, project: str | None) -> str:
        spec = {**SPEC, **({"project": project} if project else {})}
        return str(_ok(client.post("/api/v1/jobs", json=spec, headers=user.headers))["id"])

    return Team(pi, member, outsider, submit(member, "alpha"), submit(member, None),
                submit(outsider, "beta"))


def test_a_pi_reads_the_members_jobs(client: TestClient, team: Team) -> None:
    listed = client.get("/api/v1/jobs", headers=team.pi.headers).json()["items"]
    assert [j["id"] for j in listed] == [team.shared_job]
    assert listed[0]["owner"] == team.member.principal.username
    assert client.get("/api/v1/jobs", params={"mine": "true"},
                      headers=team.pi.headers).json()["items"] == []
    assert client.get("/api/v1/jobs", params={"project": "alpha"},
                      headers=team.pi.headers).json()["items"][0]["id"] == team.shared_job
    for path in ("", "/events"):
        assert client.get(f"/api/v1/jobs/{team.shared_job}{path}",
                          headers=team.pi.headers).status_code == 200
    for hidden in (team.personal_job, team.other_job):
        assert client.get(f"/api/v1/jobs/{hidden}", headers=team.pi.headers).status_code == 404
    # The member reads their own jobs only (the PI has none here); the other PI none.
    assert {j["id"] for j in client.get("/api/v1/jobs", headers=team.member.headers).json()[
        "items"]} == {team.shared_job, team.personal_job}
    assert client.get(f"/api/v1/jobs/{team.shared_job}",
                      headers=team.outsider_pi.headers).status_code == 404


def test_a_pi_neither_reads_the_files_nor_changes_the_job(client: TestClient,
                                                         team: Team) -> None:
    job = team.shared_job
    for path in ("/logs/stdout", "/outputs", "/outputs/result.txt"):
        r = client.get(f"/api/v1/jobs/{job}{path}", headers=team.pi.headers)
        assert r.status_code == 404, path
    for verb in ("cancel", "hold", "release"):
        r = client.post(f"/api/v1/jobs/{job}/{verb}", headers=team.pi.headers)
        assert r.status_code == 403 and "owner" in r.json()["detail"], verb
    r = client.delete(f"/api/v1/jobs/{job}/outputs", headers=team.pi.headers)
    assert r.status_code == 403
    # The owner still may.
    assert client.get(f"/api/v1/jobs/{job}/logs/stdout",
                      headers=team.member.headers).status_code == 200
    assert client.post(f"/api/v1/jobs/{job}/hold", headers=team.member.headers).status_code == 200


def test_the_pis_event_stream_carries_the_members_jobs(runtime: Runtime, team: Team) -> None:
    """The stream's filter, in SQL (a replay) and in memory (live): alpha's PI gets the
    events of the member's job in alpha, and of nothing else; a PI may follow that job."""
    with runtime.reading() as conn:
        every = [int(i) for i in conn.execute(text("SELECT id FROM events")).scalars()]
        for lead, expected in ((team.pi, team.shared_job), (team.outsider_pi, team.other_job)):
            where = feed_filter(conn, lead.principal, [], [JOB_STATE_TYPE])
            replayed = {row["job_id"] for row in feed.visible_after(conn, where, 0, 1000)}
            live = {row["job_id"] for row in feed.rows(conn, every) if where.passes(row)}
            assert replayed == live == {expected}
        assert feed_filter(conn, team.pi.principal, [team.shared_job], []).job_ids == (
            team.shared_job,)
        with pytest.raises(NotFound):
            feed_filter(conn, team.pi.principal, [team.personal_job], [])
