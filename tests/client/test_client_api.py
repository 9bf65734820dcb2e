"""GatewayClient against a real gateway on localhost."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.client import (
    AuthenticationRequired,
    GatewayClient,
    GatewayUnreachable,
    NotFoundError,
    StoredTokenProvider,
    ValidationFailed,
    is_final,
)
from gateway.client.credentials import CredentialStore
from tests.client.live import LiveGateway
from tests.waiting_jobs import let_jobs_go, waits


@pytest.fixture
def client(gateway: LiveGateway, tmp_path: Path) -> Iterator[GatewayClient]:
    gateway.login(tmp_path)
    store = CredentialStore(tmp_path / "credentials.json")
    with GatewayClient(gateway.url, StoredTokenProvider(gateway.url, store)) as c:
        yield c


def test_health_and_schema_need_no_token(gateway: LiveGateway) -> None:
    with GatewayClient(gateway.url) as c:
        assert c.health()["status"] == "ok"
        schema = c.job_spec_schema()
    assert "executable" in schema["properties"]


def test_submit_wait_output_events(client: GatewayClient) -> None:
    job = client.submit({"name": "echo", "executable": "sh",
                         "args": ["-c", "printf 'line1\\nline2\\n'; echo oops >&2"]})
    assert job["state"] == "ACCEPTED"
    final = client.wait(job["id"], poll_seconds=0.2, timeout=120)
    assert final["state"] == "COMPLETED", final
    assert final["exit_code"] == 0
    out = client.output(job["id"])
    assert out.data == b"line1\nline2\n"
    assert out.size == 12 and out.offset == 0
    assert client.output(job["id"], offset=6).data == b"line2\n"
    tail = client.output(job["id"], tail=6)
    assert (tail.data, tail.offset) == (b"line2\n", 6)
    assert client.output(job["id"], "stderr").data == b"oops\n"
    assert b"".join(client.follow(job["id"])) == b"line1\nline2\n"
    assert b"".join(client.follow(job["id"], tail=6)) == b"line2\n"
    states = [e["to_state"] for e in client.events(job["id"])]
    assert states[0] == "ACCEPTED" and states[-1] == "COMPLETED"


def test_follow_streams_while_running(client: GatewayClient) -> None:
    job = client.submit({"name": "ticker", "executable": "sh",
                         "args": ["-c", "for i in 1 2 3; do echo tick $i; sleep 0.3; done"]})
    data = b"".join(client.follow(job["id"]))
    assert data == b"tick 1\ntick 2\ntick 3\n"
    assert is_final(client.get_job(job["id"]))


class _FirstFollowCut(httpx.HTTPTransport):
    """A real transport whose first follow response ends after its first chunk, cleanly, as
    a stopping gateway ends it (gateway.api.http.stopping)."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.params.get("follow") == "true" and not self.cut:
            self.cut = True
            response.stream = _FirstChunk(response.stream)
        return response


class _FirstChunk(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            yield chunk
            return

    def close(self) -> None:
        self.inner.close()


def test_follow_reads_the_rest_of_a_job_that_ended_while_its_stream_was_cut(
        gateway: LiveGateway, tmp_path: Path) -> None:
    # The stream ends early with output unsent, and the job ends before the client looks
    # again: the follow used to return there, without the job's last line.
    creds = gateway.login(tmp_path)
    with GatewayClient(gateway.url, lambda: creds.access_token,
                       transport=_FirstFollowCut()) as client:
        job_id = client.submit({"name": "cut", "executable": "sh",
                                "args": ["-c", f"echo one; {waits('echo two')}"]})["id"]
        end = time.monotonic() + 120
        while client.output(job_id).data != b"one\n":
            assert time.monotonic() < end, client.get_job(job_id)
            time.sleep(0.1)
        followed = client.follow(job_id)
        first = next(followed)  # the cut stream's only chunk
        assert let_jobs_go(gateway.runtime, job_id)
        assert client.wait(job_id, poll_seconds=0.2, timeout=120)["state"] == "COMPLETED"
        assert first + b"".join(followed) == b"one\ntwo\n"


def test_idempotency_key_returns_the_same_job(client: GatewayClient) -> None:
    key = uuid.uuid4().hex
    spec = {"name": "once", "executable": "true"}
    first = client.submit(spec, idempotency_key=key)
    again = client.submit(spec, idempotency_key=key)
    assert again["id"] == first["id"]


def test_list_filters_and_cursor_iteration(client: GatewayClient) -> None:
    tag = uuid.uuid4().hex[:8]
    ids = [client.submit({"name": f"many-{i}", "executable": "true",
                          "labels": {"batch": tag}})["id"] for i in range(5)]
    page = client.list_jobs(labels={"batch": tag}, limit=2)
    assert len(page["items"]) == 2 and page["next_cursor"]
    listed = [j["id"] for j in client.iter_jobs(labels={"batch": tag}, page_size=2)]
    assert listed == list(reversed(ids))  # newest first, no gaps, no repeats
    assert client.list_jobs(labels={"batch": "nope"})["items"] == []


def test_not_found_is_typed(client: GatewayClient) -> None:
    with pytest.raises(NotFoundError) as info:
        client.get_job(str(uuid.uuid4()))
    assert info.value.status == 404
    with pytest.raises(NotFoundError):
        client.cancel(str(uuid.uuid4()))


def test_validation_failure_names_fields(client: GatewayClient) -> None:
    with pytest.raises(ValidationFailed) as info:
        client.submit({"name": "bad", "executable": "true",
                       "environment": {"LD_PRELOAD": "/x.so"}, "bogus": 1})
    err = info.value
    assert err.status == 422
    fields = {e.field for e in err.errors}
    assert "bogus" in fields
    assert any(f.startswith("environment") for f in fields)
    assert err.problem["status"] == 422


def test_cancel_running_job(client: GatewayClient) -> None:
    job = client.submit({"name": "waiting", "executable": "sh", "args": ["-c", waits()]})
    client.cancel(job["id"])
    final = client.wait(job["id"], poll_seconds=0.2, timeout=120)
    assert final["state"] == "CANCELLED"


def test_sites_lists_the_local_site(client: GatewayClient) -> None:
    names = [s["name"] for s in client.sites()]
    assert "local" in names


def test_rejected_token_is_authentication_required(gateway: LiveGateway) -> None:
    with GatewayClient(gateway.url, lambda: "not-a-jwt") as c, \
            pytest.raises(AuthenticationRequired) as info:
        c.list_jobs()
    assert "gridgate login" in str(info.value)


def test_unreachable_gateway(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on the port once the socket is closed.
    with GatewayClient(f"http://127.0.0.1:{port}") as c, \
            pytest.raises(GatewayUnreachable) as info:
        c.health()
    assert info.value.url == f"http://127.0.0.1:{port}"
    assert "gridgate serve" in str(info.value)


def test_job_id_cannot_climb_paths(client: GatewayClient) -> None:
    with pytest.raises(Exception, match="not a job id"):
        client.get_job("../sites")


def test_transport_seam(gateway: LiveGateway) -> None:
    """Any httpx transport can carry the requests (here: a real socket transport
    with a retry policy, as an embedding application might configure)."""
    transport = httpx.HTTPTransport(retries=2)
    with GatewayClient(gateway.url, transport=transport) as c:
        assert c.health()["database"] == "ok"
