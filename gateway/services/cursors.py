"""Page cursors for keyset pagination: every list of the API pages the same way.

A request takes `limit` and `cursor`; a page is `{items, next_cursor}`, and `next_cursor`
(null on the last page) is the key of the page's last item, opaque to clients. A cursor
is user input: it is decoded to exactly the key's shape or refused before any query.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from gateway.domain.errors import Invalid

Key = tuple[str | int, ...]
T = TypeVar("T")
# The API's page sizes (its `limit` query parameter): the same on every list.
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_CURSOR = 512


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of rows and the cursor of the next (None on the last page)."""

    rows: Sequence[T]
    next_cursor: str | None


def encode(key: Key) -> str:
    """The cursor that resumes just after the row with this sort key."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


def decode(cursor: str, shape: tuple[type[str] | type[int], ...]) -> Key:
    """The key a cursor from `encode` holds, checked against `shape` (the types of its
    parts); Invalid for anything else."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
    except (ValueError, binascii.Error) as exc:
        raise refused() from exc
    if not (isinstance(key, list) and len(key) == len(shape)
            and all(type(part) is kind for part, kind in zip(key, shape, strict=True))):
        raise refused()
    return tuple(key)


def page(rows: Sequence[T], limit: int, key_of: Callable[[T], Key]) -> Page[T]:
    """The page from up to `limit + 1` rows fetched in order (one more than a page shows
    whether another follows)."""
    if len(rows) > limit:
        return Page(rows[:limit], encode(key_of(rows[limit - 1])))
    return Page(rows, None)


def from_list(items: Sequence[T], limit: int, cursor: str | None,
              key_of: Callable[[T], str]) -> Page[T]:
    """A page of a short list built whole (sites, projects, allocations), in its order:
    it resumes just after the item whose key the cursor holds."""
    start = 0
    if cursor:
        after = decode(cursor, (str,))[0]
        keys = [key_of(item) for item in items]
        if after not in keys:
            raise refused()
        start = keys.index(str(after)) + 1
    return page(items[start:], limit, lambda item: (key_of(item),))


def refused() -> Invalid:
    """The error for a cursor this API did not hand out."""
    return Invalid("The cursor is not one this API returned; start again without it.",
                   field="cursor")
