"""Times in query parameters (`as_of`, `since`, `created_after`, ...): ISO 8601 only, and
a time without a zone is UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

from pydantic import BeforeValidator

# An ISO 8601 date, then optionally a time and a zone; pydantic alone would also take
# a bare number ("0.5") as seconds since 1970, which the document does not offer.
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                       r"(?:Z|z|[+-]\d{2}:?\d{2})?)?")


def _iso_time(value: object) -> object:
    if isinstance(value, str) and not _ISO_TIME.fullmatch(value):
        raise ValueError("give an ISO 8601 time, e.g. 2026-11-01T00:00:00Z")
    return value


Time = Annotated[datetime | None, BeforeValidator(_iso_time)]


def as_utc(value: datetime | None) -> datetime | None:
    """A query's time with its zone (one without a zone is UTC)."""
    return value.replace(tzinfo=UTC) if value and value.tzinfo is None else value
