"""The query parameters of every list: `limit` and `cursor` (gateway.services.cursors)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from gateway.services.cursors import DEFAULT_LIMIT, MAX_CURSOR, MAX_LIMIT

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT,
                             description="Items per page (the same bounds on every list).")]
# A cursor is base64url text (gateway.services.cursors.encode).
Cursor = Annotated[str | None, Query(max_length=MAX_CURSOR, pattern=r"^[A-Za-z0-9_-]+$",
                                     description="`next_cursor` of the previous page.")]
__all__ = ["DEFAULT_LIMIT", "Cursor", "Limit"]
