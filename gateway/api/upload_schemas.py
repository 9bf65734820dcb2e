"""What the uploads API sends back (separate from the ORM model on purpose)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from gateway.db.models import Upload


class UploadOut(BaseModel):
    id: str
    name: str
    size: int
    # Bytes the gateway holds: where the next chunk starts.
    offset: int
    state: str
    # The verified digest once complete; until then the one promised at creation.
    sha256: str | None
    created_at: datetime
    expires_at: datetime | None
    completed_at: datetime | None

    @classmethod
    def from_model(cls, upload: Upload) -> UploadOut:
        return cls(id=upload.id, name=upload.name, size=upload.size,
                   offset=upload.bytes_received, state=upload.state,
                   sha256=upload.sha256 or upload.expected_sha256,
                   created_at=upload.created_at,
                   expires_at=upload.expires_at if upload.state == "open" else None,
                   completed_at=upload.completed_at)


class UploadList(BaseModel):
    items: list[UploadOut]
