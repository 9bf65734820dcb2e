"""The report of `gridgate site check`: one line per check, and whether all passed."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    OK = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, how it went, and why."""

    name: str
    status: Status
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"check": self.name, "status": self.status.value, "detail": self.detail}


@dataclass(frozen=True)
class SiteCheckReport:
    site: str
    account: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """True only when every check passed (a skipped check is not a pass)."""
        return all(c.status is Status.OK for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"site": self.site, "account": self.account, "ok": self.ok,
                "checks": [c.as_json() for c in self.checks]}
