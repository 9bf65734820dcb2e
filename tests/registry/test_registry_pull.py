"""The gateway pulls registry images from a real registry (tests/registry/fixture.py):
docker:// images are unpacked layer by layer (whiteouts and opaque directories applied)
and packed into a SIF, oras:// artifacts give their SIF; both are kept by manifest digest,
and damaged, missing or oversized images are refused with the reference named."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from containers.image.sif import DataType, read_object, read_sif
from containers.image.tools import unsquashfs_extract_argv
from containers.refs import parse_image_ref
from gateway.cli.images.sif_build import build_image
from gateway.services.images.cache import sweep_image_cache
from gateway.services.images.registry_client import RegistryPullFailed
from gateway.services.images.registry_pull import registry_input
from gateway.settings import Settings
from gateway.store import BlobStore
from tests.registry.fixture import (
    OCI_INDEX,
    OCI_MANIFEST,
    Registry,
    push_image,
    push_sif_artifact,
    tar_layer,
)

LOWER = tar_layer([
    ("etc", "dir", None), ("etc/motd", "file", b"lower motd\n"),
    ("etc/keep", "file", b"kept\n"),
    ("var", "dir", None), ("var/cache", "dir", None),
    ("var/cache/old", "file", b"old cache\n"),
    ("usr", "dir", None), ("usr/lib", "dir", None), ("lib", "symlink", "usr/lib"),
    ("usr/lib/libold.so", "file", b"old lib\n"),
])
UPPER = tar_layer([
    ("etc/.wh.motd", "file", b""),
    ("var/cache/.wh..wh..opq", "file", b""), ("var/cache/new", "file", b"new cache\n"),
    ("lib/libnew.so", "file", b"new lib through the symlink\n"),
    ("usr/lib/.wh.libold.so", "file", b""),
])


def settings_for(tmp_path: Path, registry: Registry, **extra: object) -> Settings:
    return Settings(data_dir=tmp_path, insecure_registries=registry.host, **extra)  # type: ignore[arg-type]


def unpack_sif(sif: Path, dest: Path) -> dict[str, str]:
    """Unpack the SIF's partition into `dest`; its environment object."""
    with sif.open("rb") as stream:
        image = read_sif(stream)
        offset = image.primary_partition().offset
        env_objects = image.objects(DataType.ENV_VARS)
        environment = json.loads(read_object(stream, env_objects[0])) if env_objects else {}
    subprocess.run(unsquashfs_extract_argv(str(sif), offset, str(dest)), check=True,
                   capture_output=True)
    return environment


@pytest.fixture(scope="module")
def image(registry: Registry) -> str:
    push_image(registry, "lab/app", "1.0", [LOWER, UPPER],
               ["PATH=/usr/bin:/bin", "GREETING=hello world"])
    return f"docker://{registry.host}/lab/app:1.0"


def test_docker_image_becomes_a_sif_with_the_layers_applied(
        registry: Registry, image: str, tmp_path: Path) -> None:
    resolved = registry_input(settings_for(tmp_path, registry), BlobStore(tmp_path / "store"),
                              parse_image_ref(image))
    sif = Path(str(resolved.source.path))  # type: ignore[attr-defined]
    assert hashlib.sha256(sif.read_bytes()).hexdigest() == resolved.expected.sha256
    assert sif.stat().st_size == resolved.expected.size
    root = tmp_path / "unpacked"
    environment = unpack_sif(sif, root)
    assert environment == {"PATH": "/usr/bin:/bin", "GREETING": "hello world"}
    assert not (root / "etc/motd").exists()  # whiteout
    assert (root / "etc/keep").read_text() == "kept\n"
    assert sorted(p.name for p in (root / "var/cache").iterdir()) == ["new"]  # opaque
    assert (root / "lib").is_symlink()
    assert (root / "usr/lib/libnew.so").read_text() == "new lib through the symlink\n"
    assert not (root / "usr/lib/libold.so").exists()
    assert (root / "proc").is_dir() and (root / "mnt/0").is_dir()  # runtimes' mount points
    assert "GREETING='hello world'" in (root / ".singularity.d/env/90-environment.sh"
                                        ).read_text()


def test_a_second_resolve_downloads_nothing(registry: Registry, image: str,
                                            tmp_path: Path) -> None:
    settings, store = settings_for(tmp_path, registry), BlobStore(tmp_path / "store")
    first = registry_input(settings, store, parse_image_ref(image))
    before = len(registry.requests_logged())
    again = registry_input(settings, store, parse_image_ref(image))
    tag_requests = registry.requests_logged()[before:]
    assert again.expected == first.expected
    assert len(tag_requests) == 1 and "/manifests/1.0" in tag_requests[0]  # a tag may move
    digest = f"sha256:{_manifest_digest(registry, 'lab/app', '1.0')}"
    pinned = parse_image_ref(f"docker://{registry.host}/lab/app@{digest}")
    before = len(registry.requests_logged())
    assert registry_input(settings, store, pinned).expected == first.expected
    assert registry.requests_logged()[before:] == []  # a digest reference: no request


def _manifest_digest(registry: Registry, repo: str, tag: str) -> str:
    import httpx

    response = httpx.get(f"{registry.url}/v2/{repo}/manifests/{tag}",
                         headers={"Accept": OCI_MANIFEST})
    return hashlib.sha256(response.content).hexdigest()


def test_an_index_gives_its_linux_amd64_manifest(registry: Registry, tmp_path: Path) -> None:
    amd64 = push_image(registry, "lab/multi", "amd64-only", [LOWER], [])
    other = push_image(registry, "lab/multi", "arm64-only", [UPPER], [])
    import httpx

    sizes = {d: len(httpx.get(f"{registry.url}/v2/lab/multi/manifests/{d}",
                              headers={"Accept": OCI_MANIFEST}).content) for d in (amd64, other)}
    registry.push_manifest("lab/multi", "2.0", {
        "schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
            {"mediaType": OCI_MANIFEST, "digest": other, "size": sizes[other],
             "platform": {"os": "linux", "architecture": "arm64"}},
            {"mediaType": OCI_MANIFEST, "digest": amd64, "size": sizes[amd64],
             "platform": {"os": "linux", "architecture": "amd64"}}]}, OCI_INDEX)
    resolved = registry_input(settings_for(tmp_path, registry), BlobStore(tmp_path / "store"),
                              parse_image_ref(f"docker://{registry.host}/lab/multi:2.0"))
    root = tmp_path / "unpacked"
    unpack_sif(Path(str(resolved.source.path)), root)  # type: ignore[attr-defined]
    assert (root / "etc/motd").read_text() == "lower motd\n"  # the amd64 (lower-only) one


def test_oras_artifact_gives_its_sif(registry: Registry, tmp_path: Path) -> None:
    (tmp_path / "tree/etc").mkdir(parents=True)
    (tmp_path / "tree/etc/hello").write_text("from a SIF\n")
    data = build_image(tmp_path / "tree", tmp_path / "built.sif", arch="amd64").path.read_bytes()
    push_sif_artifact(registry, "lab/sif", "v1", data)
    resolved = registry_input(settings_for(tmp_path, registry), BlobStore(tmp_path / "store"),
                              parse_image_ref(f"oras://{registry.host}/lab/sif:v1"))
    assert resolved.expected.sha256 == hashlib.sha256(data).hexdigest()
    assert Path(str(resolved.source.path)).read_bytes() == data  # type: ignore[attr-defined]


def test_a_tampered_blob_is_refused(registry: Registry, tmp_path: Path) -> None:
    layer = tar_layer([("etc", "dir", None), ("etc/tampered", "file", b"original\n")])
    push_image(registry, "lab/tampered", "1", [layer], [])
    blob = registry.blob_file("sha256:" + hashlib.sha256(layer).hexdigest())
    data = bytearray(blob.read_bytes())
    data[-5] ^= 0xFF  # same size, other bytes: the registry serves it as it is
    blob.write_bytes(bytes(data))
    ref = f"docker://{registry.host}/lab/tampered:1"
    with pytest.raises(RegistryPullFailed, match=f"pulling {ref}: bad digest: blob sha256:"):
        registry_input(settings_for(tmp_path, registry), BlobStore(tmp_path / "store"),
                       parse_image_ref(ref))
    assert not list((tmp_path / "store/registry").glob("[0-9a-f]*"))  # nothing cached


@pytest.mark.parametrize("path", ["lab/app:no-such-tag", "lab/no-such-repo:1.0"])
def test_a_missing_image_is_not_found(registry: Registry, image: str, tmp_path: Path,
                                      path: str) -> None:
    ref = f"docker://{registry.host}/{path}"
    with pytest.raises(RegistryPullFailed, match=f"pulling {ref}: not found"):
        registry_input(settings_for(tmp_path, registry), BlobStore(tmp_path / "store"),
                       parse_image_ref(ref))


def test_an_image_over_the_size_cap_is_refused(registry: Registry, image: str,
                                               tmp_path: Path) -> None:
    with pytest.raises(RegistryPullFailed, match=r"too big: blob sha256:.* over the 100 left"):
        registry_input(settings_for(tmp_path, registry, registry_image_max_bytes=100),
                       BlobStore(tmp_path / "store"), parse_image_ref(image))


def test_plain_http_only_for_listed_registries(registry: Registry, image: str,
                                               tmp_path: Path) -> None:
    # Not listed: https only, and to public addresses only (as https:// inputs).
    with pytest.raises(RegistryPullFailed, match=f"pulling {image}: 127.0.0.1 resolves to "
                                                 "127.0.0.1, which is not a public address"):
        registry_input(Settings(data_dir=tmp_path), BlobStore(tmp_path / "store"),
                       parse_image_ref(image))


def test_unused_pulled_images_are_swept_and_pulled_again(registry: Registry, image: str,
                                                         tmp_path: Path) -> None:
    settings, store = settings_for(tmp_path, registry), BlobStore(tmp_path / "store")
    first = registry_input(settings, store, parse_image_ref(image))
    sif = Path(str(first.source.path))  # type: ignore[attr-defined]
    assert sweep_image_cache(store, 3600) == 0  # used just now: kept
    (crashed := store.root / "registry/work/left-by-a-crash").mkdir()
    old = time.time() - 7200
    for path in (sif, crashed):
        os.utime(path, (old, old))
    assert sweep_image_cache(store, 3600) == 1
    assert not sif.exists() and not crashed.exists()
    assert [p.name for p in (store.root / "registry").iterdir() if p.is_file()] == []
    before = sum("/blobs/" in r for r in registry.requests_logged())
    again = registry_input(settings, store, parse_image_ref(image))
    assert sum("/blobs/" in r for r in registry.requests_logged()) > before  # pulled again
    assert Path(str(again.source.path)).is_file()  # type: ignore[attr-defined]


def test_concurrent_resolves_pull_once(registry: Registry, tmp_path: Path) -> None:
    push_image(registry, "lab/busy", "1", [LOWER, UPPER], [])
    settings, store = settings_for(tmp_path, registry), BlobStore(tmp_path / "store")
    ref = parse_image_ref(f"docker://{registry.host}/lab/busy:1")
    before = len(registry.requests_logged())
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: registry_input(settings, store, ref), range(4)))
    assert len({r.expected for r in results}) == 1
    blobs = [r for r in registry.requests_logged()[before:] if "/blobs/" in r]
    assert len(blobs) == 3  # the config and two layers, once


def test_a_registry_that_breaks_off_is_named(tmp_path: Path) -> None:
    # A server that promises 100 bytes and closes after 10 (what a dying registry or proxy
    # does): the registry binary never does this on purpose, so a few lines stand in.
    class Truncating(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", OCI_MANIFEST)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b'{"schemaV')
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Truncating)
    threading.Thread(target=server.handle_request, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    ref = f"docker://{host}/lab/app:1"
    try:
        with pytest.raises(RegistryPullFailed, match=f"pulling {ref}: the registry at {host} "
                                                     "broke off"):
            registry_input(Settings(data_dir=tmp_path, insecure_registries=host),  # type: ignore[call-arg]
                           BlobStore(tmp_path / "store"), parse_image_ref(ref))
    finally:
        server.server_close()
