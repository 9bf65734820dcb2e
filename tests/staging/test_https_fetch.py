"""https:// inputs: the address checker as a pure function, and real fetches from a local
HTTP server (plain HTTP on 127.0.0.2, allowed for these tests only) whose redirects to
loopback are refused."""

from __future__ import annotations

import hashlib
import http.server
import io
import ipaddress
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.services.data.https_fetch import fetch, https_input, is_public_address
from gateway.services.data.input_sources import InputUnavailable
from gateway.settings import Settings
from gateway.store import BlobStore
from tests.staging.helpers import TEST_HOST, http_server, only_test_host

BODY = hashlib.shake_256(b"remote").digest(300_000)


@pytest.mark.parametrize(("address", "public"), [
    ("93.184.216.34", True),
    ("2606:2800:220:1:248:1893:25c8:1946", True),
    ("8.8.8.8", True),
    ("127.0.0.1", False),
    ("127.1.2.3", False),
    ("::1", False),
    ("10.0.0.1", False),
    ("172.16.5.4", False),
    ("192.168.1.1", False),
    ("100.64.0.1", False),  # carrier-grade NAT
    ("169.254.169.254", False),  # link-local (cloud metadata)
    ("fe80::1", False),
    ("fc00::1", False),
    ("224.0.0.1", False),
    ("ff02::1", False),
    ("240.0.0.1", False),  # reserved
    ("0.0.0.0", False),
    ("::", False),
    ("255.255.255.255", False),
    ("192.0.2.1", False),  # documentation
    ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
    ("::ffff:10.0.0.1", False),
    ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
    ("2002:5db8:d822::", True),  # 6to4 of a public address
    ("2002:0a00:0001::", False),  # 6to4 of 10.0.0.1
    ("::ffff:8.8.8.8", True),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo, client 192.0.2.45
    ("2001:0:4136:e378:8000:63bf:a2f7:f7f7", True),  # Teredo, client 93.8.8.8
    ("2001:0:7f00:1:8000:63bf:a2f7:f7f7", False),  # Teredo, server 127.0.0.1
    ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
    ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
    ("64:ff9b::a9fe:a9fe", False),  # NAT64 of 169.254.169.254
    ("64:ff9b:1::808:808", False),  # local-use NAT64 prefix
])
def test_address_checker(address: str, public: bool) -> None:
    assert is_public_address(ipaddress.ip_address(address)) is public


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}

    def do_GET(self) -> None:
        status, headers, body = self.routes.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with http_server(_Handler) as port:
        _Handler.routes = {
            "/data": (200, {}, BODY),
            "/to-data": (302, {"Location": "/data"}, b""),
            "/to-loopback": (302, {"Location": f"http://127.0.0.1:{port}/data"}, b""),
            "/to-localhost": (301, {"Location": f"http://localhost:{port}/data"}, b""),
            "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
            "/loop": (307, {"Location": "/loop"}, b""),
        }
        yield f"http://{TEST_HOST}:{port}"


def get(url: str, max_bytes: int = 1 << 20) -> bytes:
    sink = io.BytesIO()
    fetched = fetch(url, sink, max_bytes=max_bytes, max_redirects=3, timeout=10,
                    schemes=("http",), allowed=only_test_host)
    assert fetched.sha256 == hashlib.sha256(sink.getvalue()).hexdigest()
    return sink.getvalue()


def test_fetch_follows_a_checked_redirect(server: str) -> None:
    assert get(f"{server}/to-data") == BODY


@pytest.mark.parametrize("path", ["/to-loopback", "/to-localhost"])
def test_a_redirect_to_loopback_is_refused(server: str, path: str) -> None:
    with pytest.raises(InputUnavailable, match="not a public address"):
        get(f"{server}{path}")


def test_other_schemes_redirect_loops_and_size_are_refused(server: str) -> None:
    with pytest.raises(InputUnavailable, match="only those are fetched"):
        get(f"{server}/to-file")
    with pytest.raises(InputUnavailable, match="more than 3 redirects"):
        get(f"{server}/loop")
    with pytest.raises(InputUnavailable, match=r"over the limit of 1000 \(https_input_max"):
        get(f"{server}/data", max_bytes=1000)
    with pytest.raises(InputUnavailable, match="HTTP 404"):
        get(f"{server}/missing")


def test_the_default_checker_refuses_the_first_hop(server: str) -> None:
    with pytest.raises(InputUnavailable, match="not a public address"):
        fetch(f"{server}/data", io.BytesIO(), max_bytes=1 << 20, max_redirects=3,
              timeout=10, schemes=("http",))
    with pytest.raises(InputUnavailable, match="only those are fetched"):
        fetch(f"{server}/data", io.BytesIO(), max_bytes=1 << 20, max_redirects=3,
              timeout=10)


def test_https_input_is_a_private_copy_for_one_staging(server: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    store = BlobStore(settings.store_dir)
    resolved = https_input(settings, store, f"{server}/to-data", schemes=("http",),
                           allowed=only_test_host)
    sha = hashlib.sha256(BODY).hexdigest()
    assert resolved.expected.sha256 == sha and resolved.expected.size == len(BODY)
    # Not a blob of the store (no one's upload, no one's quota): a scratch file that
    # stage-in removes once staged.
    assert not store.has_blob(sha)
    assert resolved.scratch is not None and resolved.scratch.parent == store.incoming_dir
    assert resolved.scratch.read_bytes() == BODY
    assert stat.S_IMODE(resolved.scratch.stat().st_mode) & 0o077 == 0


def test_a_refused_fetch_leaves_no_incoming_file(server: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    store = BlobStore(settings.store_dir)
    with pytest.raises(InputUnavailable):
        https_input(settings, store, f"{server}/to-data", schemes=("http",))
    assert list(store.incoming_dir.iterdir()) == []


def test_stale_incoming_files_are_swept(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    old, fresh = store.new_incoming(), store.new_incoming()
    old.write_bytes(b"left by a crash")
    fresh.write_bytes(b"being fetched")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert store.sweep_incoming(3600) == 1
    assert not old.exists() and fresh.exists()
