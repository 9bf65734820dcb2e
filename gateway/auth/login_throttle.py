"""Throttle for guessing at the gateway's sign-in points: the password on the device-login
and dashboard forms, the user code on the device-login page, and a client's secret at the
OAuth endpoints.

Failures are counted per key over a sliding window, in the database: `gridgate serve
--processes N` runs N processes behind one port, and an in-memory count would give a
guesser N times the attempts (and forget them on restart). A key is what is guessed (an
account, a user code, a client id) or who guesses (a client address); beyond the limit of
any key of a request, it is answered 429 without checking anything, until enough of that
key's failures age out. A success clears the count of what was guessed right; an
address's count only ages out, so a guesser cannot clear it with a credential of their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.repositories.identity import login_failures
from gateway.settings import Settings


@dataclass(frozen=True)
class Counted:
    """A key failures are counted against, and how many it may have within the window."""

    key: str
    limit: int


@dataclass(frozen=True)
class LoginLimits:
    # Failures allowed within the window for one credential (an account, a user code,
    # a client id) and for one client address.
    per_credential: int
    per_address: int
    window: timedelta

    @classmethod
    def from_settings(cls, settings: Settings) -> LoginLimits:
        return cls(settings.login_max_failures_per_account,
                   settings.login_max_failures_per_address,
                   timedelta(seconds=settings.login_failure_window_seconds))

    def account(self, username: str) -> Counted:
        """The key of a local account's password."""
        return Counted(f"user:{username}"[:128], self.per_credential)

    def user_code(self, code: str) -> Counted:
        """The key of a device-flow user code (as stored, e.g. `WDJB-MJHT`)."""
        return Counted(f"code:{code}"[:128], self.per_credential)

    def client(self, client_id: str) -> Counted:
        """The key of an OAuth client's secret."""
        return Counted(f"client:{client_id}"[:128], self.per_credential)

    def address(self, address: str) -> Counted:
        """The key of a client address (whoever guesses from there)."""
        return Counted(f"addr:{address}"[:128], self.per_address)


def retry_after(session: Session, limits: LoginLimits, counted: Sequence[Counted],
                now: datetime) -> int | None:
    """Seconds until a request counted against `counted` may be tried again; None: now."""
    rows = login_failures.since(session, [c.key for c in counted], now - limits.window)
    wait = 0.0
    for c in counted:
        times = [at for key, at in rows if key == c.key]
        if len(times) >= c.limit:
            # Allowed again once the count is below the limit: when this one ages out.
            frees_at = times[len(times) - c.limit] + limits.window
            wait = max(wait, (frees_at - now).total_seconds())
    return max(1, math.ceil(wait)) if wait > 0 else None


def record_failure(session: Session, limits: LoginLimits, counted: Sequence[Counted],
                   now: datetime) -> None:
    """Count a failed attempt against each of `counted`."""
    # Failures past the window count for nothing: drop them, so the table stays small.
    login_failures.purge_until(session, now - limits.window)
    login_failures.add(session, [c.key for c in counted], now)
    session.flush()


def record_success(session: Session, guessed: Counted) -> None:
    """`guessed` (an account, a client) was right: its failures no longer count."""
    login_failures.clear(session, guessed.key)
