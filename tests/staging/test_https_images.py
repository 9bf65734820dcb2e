"""https:// SIF images (gateway.services.images.https_images) from a real local HTTP server that
honours conditional GETs the way web servers do: an unchanged image is downloaded once, a
changed one again, and one without validators (or marked no-store) every time."""

from __future__ import annotations

import hashlib
import http.server
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gateway.services.data.input_sources import ResolvedInput
from gateway.services.images.cache import sweep_image_cache
from gateway.services.images.https_images import https_image
from gateway.settings import Settings
from gateway.store import BlobStore
from tests.staging.helpers import TEST_HOST, http_server, only_test_host

MODIFIED = "Sat, 28 Nov 2026 09:00:00 GMT"


@dataclass
class Served:
    """One path's image, its validators, and what the server saw."""

    body: bytes
    etag: str | None = None
    last_modified: str | None = None
    cache_control: str | None = None
    requests: list[dict[str, str]] = field(default_factory=list)
    bodies_sent: int = 0


class _Handler(http.server.BaseHTTPRequestHandler):
    served: dict[str, Served] = {}

    def do_GET(self) -> None:
        item = self.served[self.path]
        item.requests.append({k: v for k, v in self.headers.items() if k.startswith("If-")})
        unchanged = ((item.etag is not None and self.headers.get("If-None-Match") == item.etag)
                     or (item.etag is None and item.last_modified is not None
                     and self.headers.get("If-Modified-Since") == item.last_modified))
        self.send_response(304 if unchanged else 200)
        for name, value in (("ETag", item.etag), ("Last-Modified", item.last_modified),
                            ("Cache-Control", item.cache_control)):
            if value is not None:
                self.send_header(name, value)
        self.send_header("Content-Length", "0" if unchanged else str(len(item.body)))
        self.end_headers()
        if not unchanged:
            item.bodies_sent += 1
            self.wfile.write(item.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.served = {}
    with http_server(_Handler) as port:
        yield f"http://{TEST_HOST}:{port}"


def serve(path: str, **kw: object) -> Served:
    item = Served(hashlib.shake_256(path.encode()).digest(200_000), **kw)  # type: ignore[arg-type]
    _Handler.served[path] = item
    return item


def image(store: BlobStore, url: str) -> ResolvedInput:
    return https_image(Settings(data_dir=store.root.parent), store, url, schemes=("http",),
                       allowed=only_test_host)


def read(resolved: ResolvedInput) -> bytes:
    return Path(str(resolved.source.path)).read_bytes()  # type: ignore[attr-defined]


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "store")


def test_an_unchanged_image_is_downloaded_once(server: str, store: BlobStore) -> None:
    item = serve("/app.sif", etag='"v1"', last_modified=MODIFIED)
    first, second = image(store, f"{server}/app.sif"), image(store, f"{server}/app.sif")
    assert item.bodies_sent == 1
    assert item.requests == [{}, {"If-None-Match": '"v1"', "If-Modified-Since": MODIFIED}]
    assert first == second and first.scratch is None  # kept in the cache, not scratch
    assert read(second) == item.body
    assert second.expected.sha256 == hashlib.sha256(item.body).hexdigest()
    assert list(store.incoming_dir.iterdir()) == []


def test_last_modified_alone_is_enough(server: str, store: BlobStore) -> None:
    item = serve("/app.sif", last_modified=MODIFIED)
    for _ in range(3):
        assert read(image(store, f"{server}/app.sif")) == item.body
    assert item.bodies_sent == 1


def test_a_changed_image_is_downloaded_again(server: str, store: BlobStore) -> None:
    item = serve("/app.sif", etag='"v1"')
    old = image(store, f"{server}/app.sif")
    item.body, item.etag = b"rebuilt" * 1000, '"v2"'
    new = image(store, f"{server}/app.sif")
    assert read(new) == b"rebuilt" * 1000 and new.expected != old.expected
    assert image(store, f"{server}/app.sif") == new
    assert item.bodies_sent == 2


@pytest.mark.parametrize("headers", [{}, {"etag": '"v1"', "cache_control": "no-store"}],
                         ids=["no validators", "no-store"])
def test_without_validators_each_staging_downloads_a_scratch_copy(
        server: str, store: BlobStore, headers: dict[str, str]) -> None:
    item = serve("/app.sif", **headers)
    for _ in range(2):
        resolved = image(store, f"{server}/app.sif")
        assert resolved.scratch is not None and read(resolved) == item.body
        resolved.scratch.unlink()  # as stage-in does once staged
    assert item.bodies_sent == 2 and item.requests == [{}, {}]


def test_workers_wanting_one_image_at_once_download_it_once(
        server: str, store: BlobStore) -> None:
    item = serve("/app.sif", etag='"v1"')
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: image(store, f"{server}/app.sif"), range(4)))
    assert item.bodies_sent == 1 and all(g == got[0] for g in got)


def test_a_swept_image_is_downloaded_whole_again(server: str, store: BlobStore) -> None:
    item = serve("/app.sif", etag='"v1"')
    first = image(store, f"{server}/app.sif")
    old = time.time() - 7200
    for path in Path(str(first.source.path)), *(store.root / "registry/https").iterdir():  # type: ignore[attr-defined]
        os.utime(path, (old, old))
    assert sweep_image_cache(store, 3600) == 1
    assert list((store.root / "registry/https").iterdir()) == []
    assert read(image(store, f"{server}/app.sif")) == item.body
    assert item.bodies_sent == 2 and item.requests[-1] == {}  # nothing to validate
