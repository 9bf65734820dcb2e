"""Throttle for password guessing on the device-login form.

Failures are counted per account and per client address over a sliding window, in the
database: `gridgate serve --processes N` runs N processes behind one port, and an
in-memory count would give a guesser N times the attempts (and forget them on restart).
Beyond either limit the form answers 429 without checking the password, until enough
failures age out. A success clears the account's count; the address's count only ages
out, so a guesser cannot clear it by logging in to an account of their own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.repositories import login_failures
from gateway.settings import Settings


@dataclass(frozen=True)
class LoginLimits:
    per_account: int
    per_address: int
    window: timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> LoginLimits:
        return cls(settings.login_max_failures_per_account,
                   settings.login_max_failures_per_address,
                   timedelta(seconds=settings.login_failure_window_seconds))


def _keys(username: str, address: str) -> tuple[str, str]:
    return f"user:{username}"[:128], f"addr:{address}"[:128]


def retry_after(session: Session, limits: LoginLimits, username: str, address: str,
                now: datetime) -> int | None:
    """Seconds until this account may be tried again from this address; None: now."""
    account, peer = _keys(username, address)
    rows = login_failures.since(session, (account, peer), now - limits.window)
    wait = 0.0
    for key, limit in ((account, limits.per_account), (peer, limits.per_address)):
        times = [at for k, at in rows if k == key]
        if len(times) >= limit:
            # Allowed again once the count is below the limit: when this one ages out.
            frees_at = times[len(times) - limit] + limits.window
            wait = max(wait, (frees_at - now).total_seconds())
    return max(1, math.ceil(wait)) if wait > 0 else None


def record_failure(session: Session, limits: LoginLimits, username: str, address: str,
                   now: datetime) -> None:
    """Count a failed attempt against the account and the address."""
    # Failures past the window count for nothing: drop them, so the table stays small.
    login_failures.purge_until(session, now - limits.window)
    login_failures.add(session, _keys(username, address), now)
    session.flush()


def record_success(session: Session, username: str) -> None:
    """The account's password was right: its failures no longer count."""
    account, _ = _keys(username, "")
    login_failures.clear(session, account)
