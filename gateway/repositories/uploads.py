"""Uploads to the gateway store, and what counts against a user's store quota."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from gateway.db.models import Job, JobOutput, Upload
from gateway.domain.staging import IN_STORE


class UploadFacts(NamedTuple):
    """What stage-in and submission checks need of an upload, without loading it."""

    state: str
    sha256: str | None
    size: int


def add(session: Session, upload: Upload) -> None:
    """Stage a new upload for the unit of work."""
    session.add(upload)


def get(session: Session, upload_id: str) -> Upload | None:
    """The upload, whoever owns it."""
    return session.get(Upload, upload_id)


def get_owned(session: Session, owner_id: str, upload_id: str, *,
              for_update: bool = False) -> Upload | None:
    """The upload if `owner_id` owns it (locked with `for_update`)."""
    query = select(Upload).where(Upload.id == upload_id, Upload.owner_id == owner_id)
    if for_update:
        query = query.with_for_update()
    return session.scalar(query)


def facts(session: Session, owner_id: str, upload_id: str) -> UploadFacts | None:
    """State, sha256 and size of the owner's upload."""
    row = session.execute(select(Upload.state, Upload.sha256, Upload.size).where(
        Upload.id == upload_id, Upload.owner_id == owner_id)).first()
    return None if row is None else UploadFacts(row.state, row.sha256, int(row.size))


def list_owned(session: Session, owner_id: str, *, after: tuple[datetime, str] | None = None,
               limit: int | None = None) -> list[Upload]:
    """The owner's uploads, newest first: up to `limit` after the (created_at, id) key
    `after` (keyset pagination)."""
    query = select(Upload).where(Upload.owner_id == owner_id)
    if after is not None:
        created, upload_id = after
        query = query.where(or_(Upload.created_at < created,
                                and_(Upload.created_at == created, Upload.id > upload_id)))
    return list(session.scalars(query.order_by(Upload.created_at.desc(), Upload.id)
                                .limit(limit)))


def advance_offset(session: Session, upload_id: str, state: str, start: int, end: int,
                   expires_at: datetime) -> bool:
    """Move an upload in `state` from offset `start` to `end`; False when its row no
    longer matches (deleted, no longer in `state`, or its offset moved)."""
    result = session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.state == state, Upload.bytes_received == start)
        .values(bytes_received=end, expires_at=expires_at)
        .execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0) == 1)


def delete(session: Session, upload: Upload) -> None:
    """Delete the upload's row."""
    session.delete(upload)


def idle_since(session: Session, state: str, now: datetime) -> list[Upload]:
    """Uploads in `state` whose expiry is at or before `now`."""
    return list(session.scalars(select(Upload).where(Upload.state == state,
                                                     Upload.expires_at <= now)))


def quota_usage(session: Session, owner_id: str, states: tuple[str, ...]) -> int:
    """Bytes of the owner's uploads in `states` plus the outputs of the owner's jobs
    fetched into the store."""
    uploads = session.scalar(select(func.coalesce(func.sum(Upload.size), 0)).where(
        Upload.owner_id == owner_id, Upload.state.in_(states)))
    outputs = session.scalar(
        select(func.coalesce(func.sum(JobOutput.size), 0))
        .join(Job, Job.id == JobOutput.job_id)
        .where(Job.owner_id == owner_id, JobOutput.location == IN_STORE))
    return int(uploads or 0) + int(outputs or 0)


def blob_referenced(session: Session, sha256: str) -> bool:
    """Whether an upload (by content or expected content) or a fetched output still
    refers to the blob `sha256`."""
    uploads = session.scalar(select(func.count()).select_from(Upload).where(
        or_(Upload.sha256 == sha256, Upload.expected_sha256 == sha256)))
    outputs = session.scalar(select(func.count()).select_from(JobOutput).where(
        JobOutput.sha256 == sha256, JobOutput.location == IN_STORE))
    return bool(uploads) or bool(outputs)
