"""HTTP Range requests (RFC 9110 14.2), the single-range subset downloads need."""

from __future__ import annotations

import re

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class Unsatisfiable(Exception):
    """The range lies outside the representation: 416 with `Content-Range: bytes */size`."""


def parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(start, end exclusive) for one byte range; None to send the whole file (no header,
    or one this server ignores, as RFC 9110 allows: several ranges, other units, junk)."""
    if header is None:
        return None
    match = _RANGE.fullmatch(header.strip())
    if match is None:
        return None
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # a suffix: the last N bytes
        length = int(last)
        if length == 0:
            raise Unsatisfiable
        return max(0, size - length), size
    start = int(first)
    end = size if not last else int(last) + 1
    if last and int(last) < start:
        return None
    if start >= size:
        raise Unsatisfiable
    return start, min(end, size)
