"""Sending a file to the gateway store: chunked, resumable, verified.

    with GatewayClient(url, provider) as gw:
        upload = upload_file(gw, Path("input.dat"))
        upload["id"], upload["sha256"]
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path

from gateway.client.api import GatewayClient
from gateway.client.errors import ClientError, ConflictError, GatewayUnreachable
from gateway.client.models import Upload

CHUNK_BYTES = 8 * 1024 * 1024
HASH_BLOCK = 1024 * 1024


def file_sha256(path: Path, on_bytes: Callable[[int], None] | None = None) -> str:
    """The file's sha256 (hex), calling `on_bytes(n)` as it reads."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(HASH_BLOCK):
            digest.update(block)
            if on_bytes is not None:
                on_bytes(len(block))
    return digest.hexdigest()


def find_resumable(client: GatewayClient, name: str, size: int, sha256: str,
                   state: str = "open") -> Upload | None:
    """An upload of the same file (name, size and sha256) in `state`, if any: an open
    one to continue, or a complete one to use again."""
    for upload in client.list_uploads():
        if (upload["state"] == state and upload["name"] == name and upload["size"] == size
                and upload["sha256"] == sha256):
            return upload
    return None


def _conflict_offset(exc: ConflictError) -> int | None:
    offset = exc.problem.get("offset")
    return offset if isinstance(offset, int) and not isinstance(offset, bool) else None


def send_chunks(client: GatewayClient, upload: Upload, path: Path, *,
                chunk_bytes: int = CHUNK_BYTES, retries: int = 5,
                on_offset: Callable[[int], None] | None = None) -> Upload:
    """PUT the file from the upload's offset to the end. After a dropped connection
    (or a 409) it asks the gateway where to continue, up to `retries` times in a row."""
    size = upload["size"]
    offset = upload["offset"]
    failures = 0
    with path.open("rb") as f:
        while offset < size:
            f.seek(offset)
            data = f.read(min(chunk_bytes, size - offset))
            if not data:
                raise ClientError(f"{path} is shorter than when the upload started; "
                                  "upload it again.")
            try:
                upload = client.put_chunk(upload["id"], data, offset, size)
                offset = upload["offset"]
                failures = 0
            except (GatewayUnreachable, ConflictError) as exc:
                failures += 1
                if failures > retries:
                    raise
                known = _conflict_offset(exc) if isinstance(exc, ConflictError) else None
                if known is None:
                    # Dropped, or the gateway is still finishing the interrupted chunk.
                    time.sleep(min(0.25 * 2 ** (failures - 1), 5.0))
                    try:
                        known = client.get_upload(upload["id"])["offset"]
                    except GatewayUnreachable:
                        continue
                offset = known
            if on_offset is not None:
                on_offset(offset)
    return upload


def upload_file(client: GatewayClient, path: Path, *, name: str | None = None,
                sha256: str | None = None, chunk_bytes: int = CHUNK_BYTES, resume: bool = True,
                retries: int = 5, on_offset: Callable[[int], None] | None = None,
                reuse: bool = False) -> Upload:
    """Upload `path` and finalize it; returns the complete upload. With `resume`, an
    open upload of the same file (an earlier, interrupted run) is continued. With
    `reuse`, a complete upload of the same file is returned as it is (nothing sent)."""
    name = name or path.name
    size = path.stat().st_size
    sha = sha256 or file_sha256(path)
    if reuse:
        done = find_resumable(client, name, size, sha, state="complete")
        if done is not None:
            return done
    upload = find_resumable(client, name, size, sha) if resume else None
    if upload is None:
        upload = client.create_upload(name, size, sha)
    if on_offset is not None:
        on_offset(upload["offset"])
    upload = send_chunks(client, upload, path, chunk_bytes=chunk_bytes, retries=retries,
                         on_offset=on_offset)
    return client.complete_upload(upload["id"], sha)
