"""Uploads (resumable, checksummed input files), as the API sends them."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict


class UploadOut(TypedDict):
    id: str
    name: str
    size: int
    # Bytes the gateway holds: where the next chunk starts.
    offset: int
    state: str  # open | complete | expired
    # The verified digest once complete; until then the one promised at creation.
    sha256: str | None
    created_at: datetime
    expires_at: datetime | None
    completed_at: datetime | None


class UploadList(TypedDict):
    """A page of your uploads, newest first; `next_cursor` asks for the next one."""

    items: list[UploadOut]
    next_cursor: str | None
