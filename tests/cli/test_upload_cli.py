"""`gridgate upload` / `gridgate uploads` and the resumable client, against a real gateway
(uvicorn on a free port, SQLite and PostgreSQL).

A dropped connection is produced for real: the client's transport sends part of a
chunk's body on the socket, then abandons the connection mid-request.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from gateway.client.api import GatewayClient
from gateway.client.errors import GatewayUnreachable
from gateway.client.uploads import upload_file
from gateway.store import BlobStore
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway, serve_gateway

MiB = 1024 * 1024
FILE_LIMIT = 64 * MiB


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    """The usual live gateway (tests/cli/conftest.py), with a small per-file limit."""
    overrides: dict[str, object] = {"upload_max_bytes": FILE_LIMIT}
    if request.param == "postgresql":
        databases = request.getfixturevalue("pg_databases")
        overrides["database_url"] = databases.create()
    try:
        with serve_gateway(tmp_path_factory.mktemp("gateway"), **overrides) as gw:
            yield gw
    finally:
        if "database_url" in overrides:
            databases.drop(str(overrides["database_url"]))


class _Body(httpx.SyncByteStream):
    def __init__(self, transport: FaultyTransport, body: bytes) -> None:
        self.transport, self.body = transport, body

    def __iter__(self) -> Iterator[bytes]:
        for i in range(0, len(self.body), 64 * 1024):
            piece = self.body[i:i + 64 * 1024]
            cut = self.transport.drop_at
            if cut is not None and self.transport.sent + len(piece) > cut:
                head = piece[:cut - self.transport.sent]
                self.transport.sent += len(head)
                self.transport.drop_at = None
                yield head
                raise httpx.WriteError("simulated dropped connection")
            self.transport.sent += len(piece)
            yield piece


class FaultyTransport(httpx.HTTPTransport):
    """A real HTTP transport that counts PUT body bytes and, once, drops the connection
    after `drop_at` of them."""

    def __init__(self, drop_at: int | None = None) -> None:
        super().__init__()
        self.drop_at = drop_at
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT":
            request.stream = _Body(self, request.read())
        return super().handle_request(request)


def make_file(path: Path, size: int, seed: str) -> bytes:
    data = hashlib.shake_256(seed.encode()).digest(size)
    path.write_bytes(data)
    return data


def client_factory(gateway: LiveGateway, tmp_path: Path
                   ) -> Callable[[FaultyTransport], GatewayClient]:
    """Clients of one (new) service user, each with its own transport."""
    creds = gateway.login(tmp_path / "client-config")
    return lambda transport: GatewayClient(gateway.url, lambda: creds.access_token,
                                           transport=transport)


def test_upload_command_then_list(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "input.dat"
    # 2 MiB chunks: above the gateway's 1 MiB general body limit, which chunks bypass.
    data = make_file(path, 5 * MiB + 321, "cli")
    result = cli("upload", str(path), "--chunk-mib", "2")
    upload_id = result.stdout.strip()
    sha = hashlib.sha256(data).hexdigest()
    assert f"as upload {upload_id}" in result.stderr and sha in result.stderr
    store = BlobStore(cli.gateway.settings.store_dir)
    assert store.blob_path(sha).read_bytes() == data
    listed = cli.json("uploads")["items"]
    assert [(u["id"], u["state"], u["offset"], u["sha256"]) for u in listed] == [
        (upload_id, "complete", len(data), sha)]
    table = cli("uploads").stdout
    assert upload_id in table and "complete" in table and "input.dat" in table
    again = cli.json("upload", str(path))
    assert again["id"] != upload_id and again["state"] == "complete"
    cli("upload-delete", upload_id)
    assert [u["id"] for u in cli.json("uploads")["items"]] == [again["id"]]
    assert store.has_blob(sha)


def test_upload_over_quota_exits_5_with_the_numbers(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "big.dat"
    with path.open("wb") as f:  # sparse: no need to write the bytes
        f.truncate(FILE_LIMIT + 1)
    result = cli("upload", str(path), code=5)
    assert "per-file limit" in result.stderr and "by 1 bytes" in result.stderr


def test_a_new_client_resumes_where_a_dropped_one_stopped(
        gateway: LiveGateway, cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "resume.dat"
    data = make_file(path, 6 * MiB + 999, "resume")
    new_client = client_factory(gateway, tmp_path)
    first = FaultyTransport(drop_at=2 * MiB + MiB // 2)
    with new_client(first) as client, \
            pytest.raises(GatewayUnreachable):
        upload_file(client, path, chunk_bytes=MiB, retries=0)  # stops at the drop
    second = FaultyTransport()
    seen: list[int] = []
    with new_client(second) as client:
        # The gateway keeps the bytes of the cut chunk that reached it: once it has
        # noticed the drop, it holds exactly what was sent.
        upload_id = client.list_uploads()[0]["id"]
        deadline = time.monotonic() + 60
        while client.get_upload(upload_id)["offset"] != first.sent:
            assert time.monotonic() < deadline, client.get_upload(upload_id)
            time.sleep(0.05)
        done = upload_file(client, path, chunk_bytes=MiB, on_offset=seen.append)
    assert done["id"] == upload_id
    assert seen[0] == first.sent == 2 * MiB + MiB // 2, "resumed from the byte it held"
    assert done["state"] == "complete" and done["sha256"] == hashlib.sha256(data).hexdigest()
    assert first.sent + second.sent < 1.3 * len(data)
    assert BlobStore(gateway.settings.store_dir).blob_path(done["sha256"]).read_bytes() == data


def test_one_client_reconnects_by_itself(gateway: LiveGateway, tmp_path: Path) -> None:
    path = tmp_path / "retry.dat"
    data = make_file(path, 4 * MiB + 17, "retry")
    transport = FaultyTransport(drop_at=MiB + 4096)
    with client_factory(gateway, tmp_path)(transport) as client:
        done = upload_file(client, path, chunk_bytes=MiB)
    assert done["sha256"] == hashlib.sha256(data).hexdigest()
    assert transport.drop_at is None, "the drop happened"
    assert transport.sent < 1.3 * len(data)


def test_the_cli_continues_an_interrupted_upload(gateway: LiveGateway, cli: Cli,
                                                 tmp_path: Path) -> None:
    path = tmp_path / "again.dat"
    data = make_file(path, 3 * MiB + 5, "again")
    # Interrupted as the CLI's own user: the CLI finds it by name, size and sha256.
    first = FaultyTransport(drop_at=MiB + MiB // 3)
    from gateway.client.credentials import CredentialStore, StoredTokenProvider

    provider = StoredTokenProvider(
        gateway.url, CredentialStore(Path(cli.env["GRIDGATE_CONFIG_DIR"]) / "credentials.json"))
    with GatewayClient(gateway.url, provider, transport=first) as client, \
            pytest.raises(GatewayUnreachable):
        upload_file(client, path, chunk_bytes=MiB, retries=0)
    with GatewayClient(gateway.url, provider) as client:
        interrupted = [u for u in client.list_uploads() if u["name"] == "again.dat"]
    assert len(interrupted) == 1 and interrupted[0]["state"] == "open"
    upload_id = cli("upload", str(path), "--chunk-mib", "1").stdout.strip()
    assert upload_id == interrupted[0]["id"]
    store = BlobStore(gateway.settings.store_dir)
    assert store.blob_path(hashlib.sha256(data).hexdigest()).read_bytes() == data
