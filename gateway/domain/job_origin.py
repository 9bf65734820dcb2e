"""Through which door a job came in: the gateway's own API (its CLI, clients and
workflows) or GA4GH TES. Stored as NULL for the gateway's own (nearly every job; the
index on origins holds only the others), shown as `api`."""

from __future__ import annotations

from enum import StrEnum


class JobOrigin(StrEnum):
    API = "api"
    TES = "tes"

    @property
    def stored(self) -> str | None:
        """The value of the jobs table's `origin` column."""
        return None if self is JobOrigin.API else self.value

    @classmethod
    def of(cls, stored: str | None) -> JobOrigin:
        """The origin a jobs row's `origin` column names."""
        return cls.API if stored is None else cls(stored)
