"""The uploads API's responses built from the ORM model; the documents are
`gateway.schemas.uploads`."""

from __future__ import annotations

from gateway.db.models import Upload
from gateway.schemas.uploads import UploadList, UploadOut

__all__ = ["UploadList", "UploadOut", "upload_out"]


def upload_out(upload: Upload) -> UploadOut:
    """What the API says about one upload."""
    return UploadOut(id=upload.id, name=upload.name, size=upload.size,
                     offset=upload.bytes_received, state=upload.state,
                     sha256=upload.sha256 or upload.expected_sha256,
                     created_at=upload.created_at,
                     expires_at=upload.expires_at if upload.state == "open" else None,
                     completed_at=upload.completed_at)
