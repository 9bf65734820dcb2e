"""A real OCI registry for the gateway's pulls: Debian's `docker-registry` (the CNCF
distribution registry v2, tests/run.sh installs it) started on a free loopback port with
filesystem storage in a temporary directory, and images pushed into it through its HTTP
API the way a client pushes (monolithic blob uploads, then the manifest)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import shutil
import socket
import ssl
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

REGISTRY_BIN = "/usr/bin/docker-registry"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
GZ_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
SIF_LAYER = "application/vnd.sylabs.sif.layer.v1.sif"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Registry:
    host: str  # 127.0.0.1:PORT, as references name it
    storage: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}"

    def push_blob(self, repo: str, data: bytes) -> dict[str, object]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        with httpx.Client(timeout=30) as http:
            start = http.post(f"{self.url}/v2/{repo}/blobs/uploads/")
            assert start.status_code == 202, start.text
            location = start.headers["Location"]
            if location.startswith("/"):
                location = self.url + location
            # The Location carries the upload's state in its query: add to it, not replace.
            separator = "&" if "?" in location else "?"
            done = http.put(f"{location}{separator}digest={digest}", content=data,
                            headers={"Content-Type": "application/octet-stream"})
            assert done.status_code == 201, done.text
        return {"digest": digest, "size": len(data)}

    def push_manifest(self, repo: str, ref: str, document: dict[str, object],
                      media: str) -> str:
        body = json.dumps(document).encode()
        with httpx.Client(timeout=30) as http:
            done = http.put(f"{self.url}/v2/{repo}/manifests/{ref}", content=body,
                            headers={"Content-Type": media})
            assert done.status_code == 201, done.text
        return "sha256:" + hashlib.sha256(body).hexdigest()

    def blob_file(self, digest: str) -> Path:
        hex_ = digest.removeprefix("sha256:")
        return (self.storage / "docker/registry/v2/blobs/sha256" / hex_[:2] / hex_ / "data")

    def requests_logged(self) -> list[str]:
        """The request lines the registry logged so far (its access log)."""
        return [line for line in self.log.read_text().splitlines()
                if "response completed" in line]


def tar_layer(entries: list[tuple[str, str, bytes | str | None]]) -> bytes:
    """A gzip tar layer of (name, kind, data) with kind file, dir or symlink (data: target)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "symlink":
                assert isinstance(data, str)
                info.type, info.linkname = tarfile.SYMTYPE, data
                tar.addfile(info)
            else:
                assert isinstance(data, bytes)
                info.size, info.mode = len(data), 0o755
                tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def push_image(registry: Registry, repo: str, tag: str,
               layers: list[bytes], env: list[str]) -> str:
    """Push an OCI image of `layers` (bottom first) tagged `tag`; its manifest digest."""
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Env": env},
                         "rootfs": {"type": "layers", "diff_ids": [
                             "sha256:" + hashlib.sha256(gzip.decompress(x)).hexdigest()
                             for x in layers]}}).encode()
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "config": {"mediaType": OCI_CONFIG, **registry.push_blob(repo, config)},
                "layers": [{"mediaType": GZ_LAYER, **registry.push_blob(repo, layer)}
                           for layer in layers]}
    return registry.push_manifest(repo, tag, manifest, OCI_MANIFEST)


def push_sif_artifact(registry: Registry, repo: str, tag: str, sif: bytes) -> str:
    """Push `sif` as `oras push` does (an OCI artifact whose one layer is the SIF)."""
    empty = registry.push_blob(repo, b"{}")
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                "artifactType": "application/vnd.sylabs.sif.config.v1+json",
                "config": {"mediaType": "application/vnd.oci.empty.v1+json", **empty},
                "layers": [{"mediaType": SIF_LAYER, **registry.push_blob(repo, sif),
                            "annotations": {"org.opencontainers.image.title": "image.sif"}}]}
    return registry.push_manifest(repo, tag, manifest, OCI_MANIFEST)


@contextlib.contextmanager
def serve(base: Path, config_for: Callable[[int], dict[str, object]], *,
          scheme: str = "http", tls: ssl.SSLContext | None = None,
          ready: int = 200) -> Iterator[int]:
    """Run `docker-registry serve` with the config `config_for(port)` on a free loopback
    port (another port if that one was taken meanwhile) until it answers GET /v2/ with
    `ready`; the port."""
    assert shutil.which(REGISTRY_BIN), "docker-registry is missing: apt-get install " \
                                       "docker-registry"
    log = base / "registry.log"
    for _ in range(3):
        port = free_port()
        config = base / "config.yml"
        config.write_text(json.dumps(config_for(port)))  # YAML is a superset of JSON
        with log.open("wb") as sink:
            process = subprocess.Popen([REGISTRY_BIN, "serve", str(config)], stdout=sink,
                                       stderr=subprocess.STDOUT)
        try:
            if _started(process, f"{scheme}://127.0.0.1:{port}/v2/", tls, ready, log):
                yield port
                return
        finally:
            process.terminate()
            process.wait(timeout=10)
    raise AssertionError("the registry found no free port: " + log.read_text())


def _started(process: subprocess.Popen[bytes], url: str, tls: ssl.SSLContext | None,
             ready: int, log: Path) -> bool:
    """True once `url` answers `ready`; False if the port was taken (try another)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url, timeout=1, verify=tls or True).status_code == ready:
                return True
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            assert "address already in use" in log.read_text(), log.read_text()
            return False
        assert time.monotonic() < deadline, "the registry did not start: " + log.read_text()
        time.sleep(0.1)


@contextlib.contextmanager
def running_registry(base: Path) -> Iterator[Registry]:
    """A plain-HTTP registry keeping its data under `base` (benchmarks use it too)."""
    with serve(base, lambda port: {
            "version": 0.1, "log": {"level": "info", "accesslog": {"disabled": False}},
            "storage": {"filesystem": {"rootdirectory": str(base / "data")},
                        "delete": {"enabled": True}},
            "http": {"addr": f"127.0.0.1:{port}"}}) as port:
        yield Registry(f"127.0.0.1:{port}", base / "data", base / "registry.log")


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("registry")) as registry:
        yield registry
