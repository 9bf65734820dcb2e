"""Uploads to the gateway store: create, record chunks, finalize, list, delete, expire.

Decisions (the API documents them too):
- A chunk must start exactly at the offset the gateway holds; anything else is a
  Conflict carrying that offset, so a client resumes from it. Retransmits of bytes
  already held are not accepted (one rule, easy to reason about).
- A chunk cut short by a dropped connection keeps the bytes that reached the disk:
  the client asks for the offset and continues from there.
- The sha256 is computed while writing (in process memory); after a restart, or when
  another gateway process took a chunk, it is recomputed from the part file at
  finalize. A mismatch is confirmed from the disk before it is reported.
- A size or checksum mismatch at finalize resets the upload to offset 0 (it stays
  open, same id, same expiry rules): the client sends the file again.
- An open upload expires `upload_ttl_seconds` after its last accepted chunk.
- Quota: the declared sizes of the user's open and complete uploads (each counted,
  even when two hold the same content), plus the outputs of the user's jobs fetched
  into the store (freed with DELETE /jobs/{id}/outputs).
"""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import BinaryIO

from sqlalchemy.orm import Session

from gateway.db.models import Upload
from gateway.domain.errors import Conflict, Invalid, NotFound, TooLarge
from gateway.domain.sizes import human_bytes
from gateway.repositories import uploads as repo
from gateway.services import cursors
from gateway.settings import Settings
from gateway.store import hashing
from gateway.store.blobs import BlobStore, is_sha256
from gateway.store.parts import PartWriter

OPEN, COMPLETE, EXPIRED = "open", "complete", "expired"
_READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class UploadLimits:
    quota_bytes: int
    max_bytes: int
    chunk_max_bytes: int
    ttl_seconds: int

    @classmethod
    def from_settings(cls, settings: Settings) -> UploadLimits:
        return cls(settings.store_quota_bytes, settings.upload_max_bytes,
                   settings.upload_chunk_max_bytes, settings.upload_ttl_seconds)


class OffsetMismatch(Conflict):
    """The chunk does not start where the gateway's copy ends; `offset` says where."""

    def __init__(self, detail: str, offset: int) -> None:
        super().__init__(detail, offset=offset)
        self.offset = offset


@dataclass(frozen=True)
class Completion:
    """What finalizing did. With `mismatch` set the upload was reset: commit, then
    report the mismatch."""

    upload: Upload
    mismatch: str | None = None



def _check_name(name: str) -> None:
    if not name or len(name) > 255 or "/" in name or any(ord(c) < 32 for c in name):
        raise Invalid("The upload name must be a file name: 1-255 characters, no '/' "
                      "and no control characters.", field="name")


def _check_sha(value: str, field: str) -> str:
    value = value.lower()
    if not is_sha256(value):
        raise Invalid(f"'{field}' must be a sha256 digest: 64 hexadecimal characters.",
                      field=field)
    return value


def store_usage(session: Session, owner_id: str) -> int:
    """Bytes counted against the user's quota: open and complete uploads, and the
    outputs of the user's jobs fetched into the store."""
    return repo.quota_usage(session, owner_id, (OPEN, COMPLETE))


def create_upload(session: Session, store: BlobStore, limits: UploadLimits, owner_id: str,
                  name: str, size: int, sha256: str | None, now: datetime) -> Upload:
    """A new open upload at offset 0, refused up front (TooLarge) over a limit."""
    _check_name(name)
    if size < 0:
        raise Invalid("'size' must be 0 or more bytes.", field="size")
    expected = _check_sha(sha256, "sha256") if sha256 is not None else None
    if size > limits.max_bytes:
        raise TooLarge(
            f"The file is {human_bytes(size)}, over the per-file limit of "
            f"{human_bytes(limits.max_bytes)} by {human_bytes(size - limits.max_bytes)}.",
            limit="upload_max_bytes", limit_bytes=limits.max_bytes,
            excess_bytes=size - limits.max_bytes)
    used = store_usage(session, owner_id)
    if used + size > limits.quota_bytes:
        excess = used + size - limits.quota_bytes
        raise TooLarge(
            f"This upload of {human_bytes(size)} would bring your gateway store usage to "
            f"{human_bytes(used + size)}, over your quota of {human_bytes(limits.quota_bytes)}"
            f" by {human_bytes(excess)}. Delete uploads you no longer need "
            "('gridgate uploads').",
            limit="store_quota_bytes", limit_bytes=limits.quota_bytes, used_bytes=used,
            excess_bytes=excess)
    upload = Upload(id=str(uuid.uuid4()), owner_id=owner_id, name=name, size=size,
                    expected_sha256=expected, bytes_received=0, state=OPEN, created_at=now,
                    expires_at=now + timedelta(seconds=limits.ttl_seconds))
    repo.add(session, upload)
    session.flush()
    store.create_part(upload.id)
    return upload


def upload_content(session: Session, store: BlobStore, limits: UploadLimits, owner_id: str,
                   name: str, data: bytes, now: datetime) -> Upload:
    """A complete upload of `data` given inline (a GA4GH TES input's `content`), under
    the same limits and quota as any upload."""
    return upload_file(session, store, limits, owner_id, name, io.BytesIO(data), now)


def upload_file(session: Session, store: BlobStore, limits: UploadLimits, owner_id: str,
                name: str, source: BinaryIO, now: datetime) -> Upload:
    """A complete upload of what `source` (a seekable file) holds, read twice: once to
    declare its size and sha256 (checked against what is written, as for any upload)."""
    digest, size = hashlib.sha256(), 0
    while block := source.read(_READ_BLOCK):
        digest.update(block)
        size += len(block)
    sha256 = digest.hexdigest()
    upload = create_upload(session, store, limits, owner_id, name, size, sha256, now)
    source.seek(0)
    with PartWriter(store, upload.id) as writer:
        writer.begin(0)
        while block := source.read(_READ_BLOCK):
            writer.write(block)
        writer.commit()
    if not record_chunk(session, upload.id, 0, size, now, limits.ttl_seconds):
        raise Conflict(f"Upload {upload.id} changed while its content was written.")
    session.refresh(upload)
    return complete_upload(session, store, owner_id, upload.id, sha256, now).upload


def get_upload(session: Session, owner_id: str, upload_id: str, *,
               for_update: bool = False) -> Upload:
    """The caller's upload; NotFound for anyone else's (indistinguishable on purpose)."""
    upload = repo.get_owned(session, owner_id, upload_id, for_update=for_update)
    if upload is None:
        raise NotFound(f"No upload {upload_id!r} (or it is not yours).")
    return upload


def list_uploads(session: Session, owner_id: str, *, limit: int,
                 cursor: str | None) -> cursors.Page[Upload]:
    """One page of the caller's uploads, newest first."""
    after = None
    if cursor:
        created, upload_id = cursors.decode(cursor, (str, str))
        try:
            after = (datetime.fromisoformat(str(created)), str(upload_id))
        except ValueError as exc:
            raise cursors.refused() from exc
    rows = repo.list_owned(session, owner_id, after=after, limit=limit + 1)
    return cursors.page(rows, limit, lambda row: (row.created_at.isoformat(), row.id))


def ensure_writable(upload: Upload, start: int, total: int) -> None:
    """Refuse a chunk for an upload that is not open, or whose range does not fit."""
    if upload.state != OPEN:
        raise Conflict(f"Upload {upload.id} is {upload.state}; it takes no more data.",
                       state=upload.state)
    if total != upload.size:
        raise Invalid(f"Content-Range says the file has {total} bytes; the upload was "
                      f"created with size {upload.size}.", field="Content-Range")
    if start != upload.bytes_received:
        raise OffsetMismatch(
            f"This chunk starts at byte {start} but the gateway holds "
            f"{upload.bytes_received} bytes of this upload; send from byte "
            f"{upload.bytes_received}.", upload.bytes_received)


def record_chunk(session: Session, upload_id: str, start: int, end: int, now: datetime,
                 ttl_seconds: int) -> bool:
    """Move the offset from `start` to `end` (and push the expiry back); False when the
    upload changed meanwhile (deleted, expired, or its offset moved)."""
    return repo.advance_offset(session, upload_id, OPEN, start, end,
                               now + timedelta(seconds=ttl_seconds))


def uploaded(session: Session, upload_id: str) -> Upload:
    """The upload as it is now (after `record_chunk` accepted a chunk of it)."""
    upload = repo.get(session, upload_id)
    if upload is None:
        raise NotFound(f"No upload {upload_id!r}.")
    return upload


def complete_upload(session: Session, store: BlobStore, owner_id: str, upload_id: str,
                    sha256: str | None, now: datetime) -> Completion:
    """Verify size and sha256 of what the gateway holds and make it a blob."""
    upload = get_upload(session, owner_id, upload_id, for_update=True)
    given = _check_sha(sha256, "sha256") if sha256 is not None else None
    if upload.state == COMPLETE:
        if given is not None and given != upload.sha256:
            raise Conflict(f"Upload {upload.id} is already complete with sha256 "
                           f"{upload.sha256}, not {given}.")
        return Completion(upload)  # finalizing twice is harmless
    if upload.state != OPEN:
        raise Conflict(f"Upload {upload.id} is {upload.state}; create a new upload.",
                       state=upload.state)
    if given and upload.expected_sha256 and given != upload.expected_sha256:
        raise Invalid(f"The sha256 given now ({given}) differs from the one given when the "
                      f"upload was created ({upload.expected_sha256}).", field="sha256")
    expected = given or upload.expected_sha256
    if expected is None:
        raise Invalid("Finalizing needs the file's sha256 (it was not given at creation).",
                      field="sha256")
    if upload.bytes_received != upload.size:
        raise OffsetMismatch(
            f"The gateway holds {upload.bytes_received} of the {upload.size} bytes of this "
            f"upload; send the rest from byte {upload.bytes_received}, then finalize.",
            upload.bytes_received)
    if not store.part_path(upload.id).exists() and store.has_blob(expected):
        # A previous finalize moved the data but did not get to record it.
        return Completion(_mark_complete(upload, expected, now))
    with PartWriter(store, upload.id):
        actual = hashing.peek(store.root, upload.id, upload.size)
        size = upload.size
        if actual != expected:
            # Never report a mismatch on the cache's word alone: ask the disk.
            size, actual = store.hash_part(upload.id)
        if size == upload.size and actual == expected:
            store.promote_part(upload.id, expected)
            hashing.forget(store.root, upload.id)
            return Completion(_mark_complete(upload, expected, now))
        upload.bytes_received = 0
        session.flush()
        os.truncate(store.part_path(upload.id), 0)
        hashing.forget(store.root, upload.id)
    return Completion(upload, mismatch=(
        f"The gateway received {size} bytes with sha256 {actual}, but the expected sha256 "
        f"is {expected}. The upload was reset to offset 0: send the file again (or check "
        "that the file did not change while it was being sent)."))


def _mark_complete(upload: Upload, sha256: str, now: datetime) -> Upload:
    upload.state = COMPLETE
    upload.sha256 = sha256
    upload.completed_at = now
    return upload


@dataclass(frozen=True)
class StoreCleanup:
    """Store files to remove once the deletion that freed them is committed: removing
    them first would lose data still referred to if the commit failed."""

    upload_ids: tuple[str, ...] = ()  # their part files and saved hash states
    blobs: tuple[str, ...] = ()  # by sha256, each only if nothing refers to it any more


def delete_upload(session: Session, owner_id: str, upload_id: str) -> StoreCleanup:
    """Delete the caller's upload; the store files to remove after the commit (its part,
    and its blob unless another upload or a fetched output has the same content)."""
    upload = get_upload(session, owner_id, upload_id, for_update=True)
    sha = upload.sha256 if upload.state == COMPLETE else None
    repo.delete(session, upload)
    session.flush()
    return StoreCleanup(upload_ids=(upload.id,), blobs=(sha,) if sha else ())


def clean_store(session: Session, store: BlobStore, cleanup: StoreCleanup) -> None:
    """Remove what `cleanup` lists; call after committing the deletion."""
    for upload_id in cleanup.upload_ids:
        store.remove_part(upload_id)
        hashing.forget(store.root, upload_id)
    for sha in cleanup.blobs:
        if not repo.blob_referenced(session, sha):
            store.remove_blob(sha)


def expire_uploads(session: Session, store: BlobStore, now: datetime) -> int:
    """Expire open uploads idle past their `expires_at` and remove their data; returns
    how many. Call it periodically (the worker does); the caller commits."""
    stale = repo.idle_since(session, OPEN, now)
    for upload in stale:
        upload.state = EXPIRED
    session.flush()
    for upload in stale:
        store.remove_part(upload.id)
        hashing.forget(store.root, upload.id)
    return len(stale)


def completed_upload(session: Session, owner_id: str, upload_id: str) -> Upload:
    """For stage-in: the caller's finalized upload (its blob is `upload.sha256`);
    Invalid when it is not complete, NotFound when it is not theirs."""
    upload = get_upload(session, owner_id, upload_id)
    if upload.state != COMPLETE or upload.sha256 is None:
        raise Invalid(f"Upload {upload_id} is {upload.state}, not complete; finalize it "
                      "before using it as a job input.")
    return upload
