"""Fetching a job's outputs: streamed to a partial file, resumed with Range after a
dropped connection, verified by sha256, then renamed into place.

    with GatewayClient(url, provider) as gw:
        for f in select_files(gw.job_outputs(job_id), "*.h5"):
            download_output(gw, job_id, f, Path("results"))
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

import httpx

from gateway.client.api import GatewayClient
from gateway.client.errors import ClientError, GatewayUnreachable
from gateway.client.models import JobOutput


def select_files(files: Sequence[JobOutput], pattern: str | None) -> list[JobOutput]:
    """The files whose path (or, for a pattern without '/', whose name) matches."""
    if pattern is None:
        return list(files)
    return [f for f in files
            if fnmatchcase(f["path"], pattern)
            or ("/" not in pattern and fnmatchcase(f["path"].rsplit("/", 1)[-1], pattern))]


def local_target(directory: Path, path: str) -> Path:
    """Where `path` (relative, from the gateway) lands under `directory`; refuses any path
    that would leave it, whatever the gateway sent."""
    parts = path.split("/")
    if (not path or path.startswith("/") or "\0" in path
            or any(p in ("", ".", "..") for p in parts)):
        raise ClientError(f"The gateway listed an unsafe output path {path!r}; not fetched.")
    return directory.joinpath(*parts)


def download_output(client: GatewayClient, job_id: str, item: JobOutput, directory: Path, *,
                  retries: int = 5, on_done: Callable[[int], None] | None = None) -> Path:
    """Download one output into `directory` (keeping its relative path) and verify its
    sha256; returns the final path. A partial file left by an interrupted run is
    continued, then the whole file is checked. `on_done(n)`: n bytes are on disk."""
    target = local_target(directory, item["path"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.gw-partial")
    failures = 0
    while True:
        have = partial.stat().st_size if partial.exists() else 0
        if have > item["size"]:
            partial.unlink()
            have = 0
        if have == item["size"]:
            break
        done = have
        try:
            with client.open_job_output(job_id, item["path"], offset=have) as response, \
                    partial.open("ab") as out:
                if have and response.status_code != 206:
                    out.truncate(0)  # the gateway sent the whole file instead
                    done = 0
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    done += len(chunk)
                    if on_done is not None:
                        on_done(done)
        except (GatewayUnreachable, httpx.TransportError):
            failures += 1
            if failures > retries:
                raise
    digest = _sha256(partial)
    if digest != item["sha256"]:
        partial.unlink()
        raise ClientError(f"{item['path']} arrived with sha256 {digest}, not "
                          f"{item['sha256']}; the partial file was removed, fetch again.")
    os.replace(partial, target)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
