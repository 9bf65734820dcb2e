"""GET /api/v1/events against a live gateway (uvicorn, worker, local site): a job's
whole life in order, resume with Last-Event-ID, nobody sees another's events, the
stream cap, heartbeats, and the client's iterator resuming a stream cut mid-way.
Reads wait for what they expect (an event, a heartbeat), never for a time."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.client import GatewayClient, ReplayGone
from gateway.db.engine import transaction
from gateway.db.models import Event as EventRow
from gateway.domain.states import JobState
from gateway.schemas import adapter
from gateway.schemas.events import EVENT_TYPES, JobStateEvent
from tests.client.live import LiveGateway, gateway_on
from tests.conftest import ALL_SCOPES

Headers = dict[str, str]
CAP = 3
# Fewer threads for short requests than a user's open streams: streams must hold none.
API_THREADS = 2
JOB_STATE = "org.gridgate.job.state"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway"),
                    events_heartbeat_seconds=0.05, events_poll_seconds=0.05,
                    output_max_streams_per_user=CAP, api_threads=API_THREADS) as gw:
        yield gw


@pytest.fixture
def http(gateway: LiveGateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=60) as client:
        yield client


def account(gateway: LiveGateway, roles: tuple[str, ...] = ("researcher",)
            ) -> tuple[str, Headers]:
    """A new user's id, and headers carrying a token of theirs."""
    name = f"u{uuid.uuid4().hex[:8]}"
    with transaction(gateway.runtime.sessions) as session:
        user_id = create_local_user(session, name, "correct horse battery", roles).id
    token = issue_access_token(gateway.settings, gateway.runtime.keys, subject=user_id,
                               client_id="tests", scope=ALL_SCOPES, username=name).token
    return user_id, {"Authorization": f"Bearer {token}"}


def user(gateway: LiveGateway, roles: tuple[str, ...] = ("researcher",)) -> Headers:
    return account(gateway, roles)[1]


class Reader:
    """The messages of one SSE response: events (parsed) and heartbeats."""

    def __init__(self, response: httpx.Response, types: tuple[str, ...] = (JOB_STATE,)
                 ) -> None:
        self.types = types  # the events returned (these tests follow states)
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        self._lines = response.iter_lines()

    def next(self) -> dict[str, Any] | None:
        """The next event, or None for a heartbeat."""
        fields: dict[str, str] = {}
        for line in self._lines:
            if line == ": heartbeat":
                assert not fields, "a heartbeat inside a message"
                return None
            if line == "":
                if "data" in fields:
                    event: dict[str, Any] = json.loads(fields["data"])
                    assert fields["id"] == event["id"]
                    assert fields["event"] == event["type"]
                    if event["type"] in self.types:
                        return event
                fields.clear()
                continue
            name, _, value = line.partition(": ")
            fields[name] = value
        raise AssertionError("the stream ended")

    def until(self, done: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Events up to and with the first for which `done` holds."""
        events: list[dict[str, Any]] = []
        while not events or not done(events[-1]):
            event = self.next()
            if event is not None:
                events.append(event)
        return events

    def until_heartbeat(self) -> list[dict[str, Any]]:
        """Events up to the next heartbeat (a poll found nothing more since)."""
        events: list[dict[str, Any]] = []
        while (event := self.next()) is not None:
            events.append(event)
        return events


def is_end(job_id: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["subject"] == job_id and JobState(e["data"]["to"]).is_final


def submit(http: httpx.Client, headers: Headers) -> str:
    response = http.post("/api/v1/jobs", headers=headers,
                         json={"name": "life", "executable": "sh", "args": ["-c", "true"]})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["id"]
    return job_id


def history(http: httpx.Client, headers: Headers, job_id: str) -> list[tuple[str, str]]:
    items = http.get(f"/api/v1/jobs/{job_id}/events", headers=headers).json()["items"]
    return [(str(item["id"]), item["to_state"]) for item in items]


def finished(http: httpx.Client, headers: Headers) -> str:
    """A job run to its end (read by polling its state)."""
    job_id = submit(http, headers)
    deadline = time.monotonic() + 180
    while not JobState(http.get(f"/api/v1/jobs/{job_id}", headers=headers)
                       .json()["state"]).is_final:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)
    return job_id


def ids_and_states(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["id"], e["data"]["to"]) for e in events]


def test_a_jobs_whole_life_arrives_in_order_as_cloud_events(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice = user(gateway)
    with http.stream("GET", "/api/v1/events", headers=alice) as response:
        reader = Reader(response)
        job_id = submit(http, alice)
        events = reader.until(is_end(job_id))
    assert ids_and_states(events) == history(http, alice, job_id)
    for event in events:  # each is what the OpenAPI document says it is
        adapter(JobStateEvent).validate_python(event, strict=True)
    assert [e["data"]["to"] for e in events][:1] == ["ACCEPTED"]
    first = events[0]
    assert first["specversion"] == "1.0"
    assert first["source"] == gateway.url + "/api/v1/jobs"
    assert first["subject"] == job_id and first["datacontenttype"] == "application/json"
    assert first["time"].endswith("Z")
    assert first["data"]["from"] is None and first["data"]["job"]["id"] == job_id
    assert first["data"]["job"]["name"] == "life"
    assert all(e["data"]["from"] == before["data"]["to"]
               for before, e in itertools.pairwise(events))


def test_a_stream_resumes_after_last_event_id_with_only_later_events(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice = user(gateway)
    job_id = finished(http, alice)
    past = history(http, alice, job_id)
    assert len(past) >= 3
    resume = past[1][0]
    for where in ({"headers": {**alice, "Last-Event-ID": resume}, "params": {"job": job_id}},
                  {"headers": alice, "params": {"job": job_id, "last_event_id": resume}}):
        with http.stream("GET", "/api/v1/events", **where) as response:
            got = ids_and_states(Reader(response).until_heartbeat())
        assert [e for e in got if int(e[0]) > int(resume)] == past[2:]
        # On PostgreSQL, what was written shortly before the resume point comes again
        # first (it may have committed after it: FeedCursor.resumed); never the point.
        again = [e for e in got if int(e[0]) <= int(resume)]
        assert again == (past[:1] if gateway.settings.database_url.startswith("postgresql")
                         else []), got
    # Without an id the stream starts at the end: nothing of the past comes.
    with http.stream("GET", "/api/v1/events", params={"job": job_id},
                     headers=alice) as response:
        assert Reader(response).until_heartbeat() == []


def test_nobody_sees_another_users_events(gateway: LiveGateway, http: httpx.Client) -> None:
    alice, bob = user(gateway), user(gateway)
    alices, bobs = finished(http, alice), finished(http, bob)
    # A replay of everything bob may see holds his job's life and nothing of alice's.
    with http.stream("GET", "/api/v1/events", headers={**bob, "Last-Event-ID": "0"}
                     ) as response:
        seen = Reader(response).until_heartbeat()
    assert {e["subject"] for e in seen} == {bobs}
    assert ids_and_states(seen) == history(http, bob, bobs)
    # Naming alice's job reads as missing, as GET /jobs/{id} does, with a resume too.
    for extra in ({}, {"Last-Event-ID": "0"}):
        refused = http.get("/api/v1/events", params={"job": alices},
                           headers={**bob, **extra})
        assert refused.status_code == 404
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json() == {**refused.json(), "status": 404}
        assert http.get(f"/api/v1/jobs/{alices}", headers=bob).status_code == 404
    # An auditor reads every job, so every job's events.
    auditor = user(gateway, ("auditor",))
    with http.stream("GET", "/api/v1/events", params={"job": [alices, bobs]},
                     headers={**auditor, "Last-Event-ID": "0"}) as response:
        seen = Reader(response).until_heartbeat()
    assert {e["subject"] for e in seen} == {alices, bobs}


def test_streams_count_against_the_users_cap(gateway: LiveGateway, http: httpx.Client) -> None:
    alice = user(gateway)
    with contextlib.ExitStack() as streams:
        held = [streams.enter_context(http.stream("GET", "/api/v1/events", headers=alice))
                for _ in range(CAP)]
        assert all(response.status_code == 200 for response in held)
        # More streams are open than the API has threads, and short requests answer.
        assert http.get("/api/v1/jobs", headers=alice).status_code == 200
        refused = http.get("/api/v1/events", headers=alice)
        assert refused.status_code == 429
        assert refused.headers["content-type"] == "application/problem+json"
        assert int(refused.headers["retry-after"]) > 0
        assert f"{CAP} streams open" in refused.json()["detail"]
        # Another user has slots of their own.
        with http.stream("GET", "/api/v1/events", headers=user(gateway)) as other:
            assert other.status_code == 200
    # Closed streams give their slots back (once the server sees the client gone).
    deadline = time.monotonic() + 60
    while True:
        with http.stream("GET", "/api/v1/events", headers=alice) as response:
            if response.status_code == 200:
                break
        assert time.monotonic() < deadline, "the slots were not given back"
        time.sleep(0.1)


def test_bad_filters_and_ids_get_problems(gateway: LiveGateway, http: httpx.Client) -> None:
    alice = user(gateway)
    wrong_type = http.get("/api/v1/events", headers=alice, params={"type": "org.nope"})
    assert wrong_type.status_code == 422
    assert "org.gridgate.job.state" in wrong_type.json()["detail"]
    wrong_id = http.get("/api/v1/events", headers={**alice, "Last-Event-ID": "abc"})
    assert wrong_id.status_code == 422
    assert "event id" in wrong_id.json()["detail"]
    assert http.get("/api/v1/events").status_code == 401
    # Every type there is, by name, is a valid filter.
    with http.stream("GET", "/api/v1/events", headers=alice,
                     params={"type": list(EVENT_TYPES)}) as response:
        assert Reader(response).until_heartbeat() == []


class CutOnce(httpx.BaseTransport):
    """Passes requests to the gateway; the first event stream breaks after `after`
    events (as a dropped connection does). Records each stream's Last-Event-ID."""

    def __init__(self, after: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.after = after
        self.resumed_from: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path != "/api/v1/events":
            return response
        self.resumed_from.append(request.headers.get("last-event-id"))
        if len(self.resumed_from) > 1:
            return response
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Cut(response, self.after))

    def close(self) -> None:
        self.inner.close()


class _Cut(httpx.SyncByteStream):
    def __init__(self, response: httpx.Response, after: int) -> None:
        self.response, self.after = response, after

    def __iter__(self) -> Iterator[bytes]:
        buffer, sent = b"", 0
        for chunk in self.response.stream:
            buffer += chunk
            while b"\n\n" in buffer:
                message, buffer = buffer.split(b"\n\n", 1)
                yield message + b"\n\n"
                sent += message.startswith(b"id: ")
                if sent == self.after:
                    raise httpx.ReadError("cut by the test")

    def close(self) -> None:
        self.response.close()


def test_the_client_resumes_a_cut_stream_without_loss_or_repeat(
        gateway: LiveGateway, http: httpx.Client, tmp_path: Path) -> None:
    alice = user(gateway)
    job_id = finished(http, alice)
    past = history(http, alice, job_id)
    cut = CutOnce(after=2)
    token = alice["Authorization"].split()[1]
    with GatewayClient(gateway.url, lambda: token, transport=cut) as client:
        stream = client.stream_events([job_id], [JOB_STATE], last_event_id="0")
        got = [next(stream) for _ in past]
        stream.close()
    assert [(e["id"], e["data"]["to"]) for e in got] == past
    assert cut.resumed_from == ["0", past[1][0]]


def test_a_resume_from_beyond_the_replay_window_says_gone_then_goes_on(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice = user(gateway)
    old_job = finished(http, alice)
    first = int(history(http, alice, old_job)[0][0])
    with transaction(gateway.runtime.sessions) as session:  # as if a month had passed
        session.execute(update(EventRow).where(EventRow.id == first)
                        .values(at=datetime.now(UTC) - timedelta(days=30)))
    resume = {**alice, "Last-Event-ID": str(first - 1)}
    with http.stream("GET", "/api/v1/events", headers=resume) as response:
        reader = Reader(response)
        lines = reader._lines
        message = [next(lines) for _ in range(4)]  # retry, then the gone message
        assert message[0].startswith("retry: ") and message[1] == ""
        top = message[2].removeprefix("id: ")
        assert message[3] == "event: org.gridgate.stream.gone"
        gone = json.loads(next(lines).removeprefix("data: "))
        assert gone["status"] == 410 and gone["type"] == "/problems/replay-window"
        assert f"after id {first - 1}" in gone["detail"] and gone["last_event_id"] == top
        assert int(top) >= int(history(http, alice, old_job)[-1][0])
        job_id = submit(http, alice)  # the stream goes on with new events
        assert reader.until(is_end(job_id))[-1]["subject"] == job_id
    with GatewayClient(gateway.url, lambda: alice["Authorization"].split()[1]) as client, \
            pytest.raises(ReplayGone) as info:
        next(iter(client.stream_events(last_event_id=str(first - 1))))
    assert int(info.value.last_event_id) >= int(history(http, alice, job_id)[-1][0])
    # From just after the old event, nothing is older than the window: a plain replay.
    with http.stream("GET", "/api/v1/events", params={"job": old_job},
                     headers={**alice, "Last-Event-ID": str(first)}) as response:
        replayed = Reader(response).until_heartbeat()
    assert ids_and_states(replayed) == history(http, alice, old_job)[1:]


def test_a_stream_of_one_project_or_one_workflow_shows_only_its_jobs(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice, bob = user(gateway), user(gateway)
    admin = user(gateway, ("researcher", "admin"))
    project = http.get(f"/api/v1/jobs/{finished(http, alice)}",
                       headers=alice).json()["project"]
    flow = http.post("/api/v1/workflows", headers=alice, json={"name": "one", "steps": {
        "a": {"job": {"executable": "sh", "args": ["-c", "true"]}}}})
    assert flow.status_code == 202, flow.text
    workflow_id = flow.json()["id"]
    step_job = flow.json()["steps"][0]["job_id"]
    before = str(int(history(http, alice, step_job)[0][0]) - 1)
    # Bob's job between them: in neither alice's project nor her workflow.
    with http.stream("GET", "/api/v1/events", headers=admin,
                     params={"project": project}) as by_project, \
            http.stream("GET", "/api/v1/events", headers=alice,
                        params={"workflow": workflow_id,
                                "last_event_id": before}) as by_workflow:
        bobs = finished(http, bob)
        mine = submit(http, alice)
        shown = Reader(by_project).until(is_end(mine))
        steps = Reader(by_workflow).until(lambda e: JobState(e["data"]["to"]).is_final)
    assert bobs not in {e["subject"] for e in shown}
    assert {e["data"]["job"]["project"] for e in shown} == {project}
    assert {e["subject"] for e in steps} == {step_job}
    assert ids_and_states(steps) == history(http, alice, step_job)
    # Not a member, not yours: the answers GET gives.
    assert http.get("/api/v1/events", headers=bob,
                    params={"project": project}).status_code == 404
    assert http.get("/api/v1/events", headers=bob,
                    params={"workflow": workflow_id}).status_code == 404
