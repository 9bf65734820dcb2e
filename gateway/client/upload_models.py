"""The uploads API's JSON documents, as TypedDicts (raw, what `--json` prints)."""

from __future__ import annotations

from typing import TypedDict


class Upload(TypedDict):
    id: str
    name: str
    size: int
    # Bytes the gateway holds: where the next chunk starts.
    offset: int
    state: str  # open | complete | expired
    sha256: str | None
    created_at: str
    expires_at: str | None
    completed_at: str | None


class JobFile(TypedDict):
    """One collected output of a job (GET /jobs/{id}/files)."""

    path: str
    size: int
    sha256: str
    location: str  # gateway (fetched into the store) | site (kept in the job directory)
    site: str
