"""`GatewayClient.wait` on the event stream: it reads the job once per event (not on a
timer), keeps its deadline while no event comes, and polls against a gateway that
has no stream. Jobs are held by a file, never by a time."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.client import GatewayClient, StoredTokenProvider
from gateway.client.credentials import CredentialStore
from tests.client.live import LiveGateway
from tests.waiting_jobs import let_jobs_go, waits


class Counting(httpx.BaseTransport):
    """Passes requests to the gateway and counts them by path; `hide_events` answers
    GET /events with 404, as a gateway from before the stream does."""

    def __init__(self, hide_events: bool = False) -> None:
        self.inner = httpx.HTTPTransport()
        self.hide_events = hide_events
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.paths.append(request.url.path)
        if self.hide_events and request.url.path == "/api/v1/events":
            return httpx.Response(404, json={"title": "Not Found", "status": 404,
                                             "detail": "Not Found"},
                                  headers={"Content-Type": "application/problem+json"})
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def store(gateway: LiveGateway, tmp_path: Path) -> CredentialStore:
    gateway.login(tmp_path)
    return CredentialStore(tmp_path / "credentials.json")


def client_with(gateway: LiveGateway, store: CredentialStore,
                transport: Counting) -> GatewayClient:
    return GatewayClient(gateway.url, StoredTokenProvider(gateway.url, store),
                         transport=transport)


@pytest.fixture
def counting() -> Iterator[Counting]:
    transport = Counting()
    yield transport
    transport.close()


def test_wait_reads_the_job_once_per_event_of_its_stream(
        gateway: LiveGateway, store: CredentialStore, counting: Counting) -> None:
    with client_with(gateway, store, counting) as client:
        job_id = client.submit({"name": "w", "executable": "sh",
                                "args": ["-c", waits("echo done")]})["id"]
        seen: list[str] = []
        done: list[dict[str, object]] = []
        waiter = threading.Thread(target=lambda: done.append(client.wait(
            job_id, timeout=300, on_update=lambda job: seen.append(job["state"]))))
        waiter.start()
        # Polling would read the job every second while it is held; on the stream it
        # is read when it changes. (Another client, not counted, sees it run.)
        with client_with(gateway, store, Counting()) as other:
            other.wait(job_id, until=frozenset({"RUNNING"}), timeout=300)
        let_jobs_go(gateway.runtime, job_id)
        waiter.join(timeout=300)
        assert done and done[0]["state"] == "COMPLETED", done
        changes = len(client.events(job_id))
    reads = counting.paths.count(f"/api/v1/jobs/{job_id}")
    assert "/api/v1/events" in counting.paths
    assert reads == len(seen) <= changes + 1  # once on subscribing, then per event
    assert seen[-1] == "COMPLETED"


def test_a_wait_with_a_deadline_returns_while_no_event_comes(
        gateway: LiveGateway, store: CredentialStore, counting: Counting) -> None:
    with client_with(gateway, store, counting) as client:
        job_id = client.submit({"name": "w", "executable": "sh", "args": ["-c", waits()]})["id"]
        running = client.wait(job_id, until=frozenset({"RUNNING"}), timeout=300)
        assert running["state"] == "RUNNING"
        still = client.wait(job_id, timeout=0.5)  # the job waits for its file: no event
        assert still["state"] == "RUNNING"
        let_jobs_go(gateway.runtime, job_id)
        assert client.wait(job_id, timeout=300)["state"] == "COMPLETED"


def test_wait_polls_a_gateway_without_an_event_stream(
        gateway: LiveGateway, store: CredentialStore) -> None:
    old = Counting(hide_events=True)
    with client_with(gateway, store, old) as client:
        job_id = client.submit({"name": "w", "executable": "sh",
                                "args": ["-c", "echo done"]})["id"]
        final = client.wait(job_id, timeout=300, poll_seconds=0.2)
    old.close()
    assert final["state"] == "COMPLETED", json.dumps(final)
    assert old.paths.count("/api/v1/events") == 1  # tried once, then polled
    assert old.paths.count(f"/api/v1/jobs/{job_id}") >= 1
