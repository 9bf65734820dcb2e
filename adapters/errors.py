"""Every error an adapter raises, in one tree. `transient`: trying again later may help.

    AdapterError                 any adapter failure; `str()` is a sentence for a person
    ├── SubmitRejected           the scheduler refused the job (bad partition, too many nodes)
    ├── UnknownJob               the scheduler has no record of this job id
    ├── SiteUnavailable          the site cannot be reached or did not answer in time (transient)
    ├── StagingFailed            bytes could not be placed verified (content kept mismatching)
    ├── SiteCommandFailed        a file command on the site exited non-zero
    ├── UnknownScheduler         a site names a scheduler kind no adapter registers
    └── TransportError           carrying a command or file to or from the site failed
        ├── InvalidCommand       the argv cannot be sent as given (empty, not strings, NUL)
        ├── HostKeyMismatch      the server's host key is not one the site config pins
        ├── AuthenticationFailed the site refused our key, or the key could not be loaded
        │   └── CredentialsRefused no certificate for this account: one user's, not the site's
        ├── OutputTooLarge       a command wrote more than the output cap; it was stopped
        ├── FileTransferError    a file could not be written or read (permissions, ...)
        ├── ConnectionFailed     + SiteUnavailable: unreachable, or the connection broke (transient)
        │   └── CircuitOpen      recent attempts failed: fail fast until `retry_at` (transient)
        └── CommandTimeout       + SiteUnavailable: a command did not finish in time (transient)

`+ X` names a second base: connection trouble and timeouts are both a TransportError (what
failed) and SiteUnavailable (what to do: try later). A command that ran and exited non-zero
is not an error: its `CommandResult` says so. No HTTP here: the gateway maps these to
problem documents in one place (gateway/api/problems.py). tests/adapters/test_error_tree.py
checks this drawing against the classes.
"""

from __future__ import annotations

from datetime import datetime

# `transient` is set on every class explicitly: the transient transport errors inherit from
# both TransportError and SiteUnavailable, and the first base in the MRO would otherwise win.


class AdapterError(Exception):
    """Base of every adapter failure."""

    transient = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SubmitRejected(AdapterError):
    """The scheduler refused the job (bad partition, too many nodes, ...). Final."""

    transient = False


class UnknownJob(AdapterError):
    """The scheduler has no record of this job id."""

    transient = False


class UnknownScheduler(AdapterError):
    """A scheduler kind no registered adapter has (adapters/registry.py)."""

    transient = False


class SiteUnavailable(AdapterError):
    """The site cannot be reached or did not answer in time. Try again later."""

    transient = True


class StagingFailed(AdapterError):
    """The bytes could not be placed verified (e.g. the content kept mismatching)."""

    transient = False


class SiteCommandFailed(AdapterError):
    """A file command on the site exited non-zero."""

    transient = False


# --- the transport's errors ------------------------------------------------------------


class TransportError(AdapterError):
    """Carrying a command or file to or from the site failed (not the scheduler's answer)."""

    transient = False


class InvalidCommand(TransportError):
    """The argv cannot be sent as given (empty, not strings, or a NUL byte)."""

    transient = False


class HostKeyMismatch(TransportError):
    """The server's host key is not one the site config pins. Nothing was authenticated."""

    transient = False

    def __init__(
        self, message: str, *, host: str, port: int, offered: str, expected: tuple[str, ...]
    ) -> None:
        super().__init__(message)
        self.host = host
        self.port = port
        # "<key type> SHA256:<fingerprint>" of what the server showed, and of the pins.
        self.offered = offered
        self.expected = expected


class AuthenticationFailed(TransportError):
    """The site refused our key, or the key could not be loaded."""

    transient = False


class CredentialsRefused(AuthenticationFailed):
    """No certificate was signed for this account (its user was disabled or is unknown):
    the trouble of one user's jobs, never the site's."""

    transient = False


class OutputTooLarge(TransportError):
    """A command wrote more than the transport's output cap; it was stopped."""

    transient = False

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class FileTransferError(TransportError):
    """A file could not be written or read (permissions, missing directory, ...)."""

    transient = False

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ConnectionFailed(TransportError, SiteUnavailable):
    """The site could not be reached, or the connection broke. Try again later.

    `retry_at` (wall clock, UTC): when the site's breaker lets the next attempt through,
    if it is holding attempts back (None: at once).
    """

    transient = True

    def __init__(self, message: str, *, retry_at: datetime | None = None) -> None:
        super().__init__(message)
        self.retry_at = retry_at


class CircuitOpen(ConnectionFailed):
    """Recent attempts failed; calls fail fast until `retry_at` (wall clock, UTC)."""

    transient = True

    retry_at: datetime

    def __init__(self, message: str, *, site: str, since: datetime, retry_at: datetime) -> None:
        super().__init__(message, retry_at=retry_at)
        self.site = site
        self.since = since


class CommandTimeout(TransportError, SiteUnavailable):
    """A command did not finish in time; its process (group) was killed. Try again later."""

    transient = True
