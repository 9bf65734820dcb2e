"""Errors raised by the gridgate client, modelled on httpx's exception tree.

    ClientError                  anything the client reports; `str()` is a sentence for a person
    ├── GatewayUnreachable       no connection (refused, DNS, timeout): carries the URL
    │   └── StreamEnded          a followed output stream ended early and could not resume
    ├── AmbiguousJobId           a short id that starts several readable jobs' ids
    ├── ReplayGone               an event stream resumed from beyond the replay window
    ├── AuthenticationRequired   no token, or the gateway answered 401
    │   └── SessionExpired       the access and refresh tokens have both expired
    ├── OAuthError               the login server refused a request: `error` says why (client.oauth)
    └── ProblemError             the gateway answered an RFC 9457 problem (or another error)
        ├── NotFoundError        404: no such job (or it belongs to someone else)
        ├── ConflictError        409: e.g. the state does not allow it
        └── ValidationFailed     400/422: carries the per-field `errors`

`NNN:` is the status `problem_error` picks the class for; `(client.oauth)`: the module
under `gateway` that defines it, when not this one. tests/client/test_error_tree.py checks
this drawing against the classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # httpx is imported by whoever made the request: the CLI starts faster
    import httpx


class ClientError(Exception):
    """Base of every error the client raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class GatewayUnreachable(ClientError):
    """The gateway could not be reached at all."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(
            f"Cannot reach the gateway at {url} ({reason}). Is `gridgate serve` running? "
            "Set --gateway or GRIDGATE_URL to point elsewhere."
        )
        self.url = url
        self.reason = reason


class AmbiguousJobId(ClientError):
    """A short job id that starts more than one readable job's id (or job arrays': `what`);
    `candidates` are (some of) them, newest first, and `more` says whether there are
    others."""

    def __init__(self, prefix: str, candidates: list[Any], *, more: bool = False,
                 what: str = "jobs") -> None:
        lines = [f"'{prefix}' starts the ids of {'more than ' if more else ''}"
                 f"{len(candidates)} {what} you can read; give more of the id:"]
        lines += [f"  {item['id']}  {_standing(item):<11}  {item['name']}"
                  for item in candidates]
        if more:
            lines.append("  ...")
        super().__init__("\n".join(lines))
        self.prefix = prefix
        self.candidates = candidates
        self.more = more


def _standing(item: Any) -> str:
    # A job array has no state of its own: its task count instead.
    return str(item.get("state") or f"{item.get('task_count')} tasks")


class StreamEnded(GatewayUnreachable):
    """A followed output stream ended before its job did (the gateway stopped, or the
    connection broke) and the gateway could not be reached again to resume it."""

    def __init__(self, url: str, job_id: str, stream: str, ended: str, reason: str) -> None:
        super().__init__(url, reason)
        self.message = (
            f"The {stream} stream of job {job_id} ended: {ended}, and the gateway at {url} "
            f"cannot be reached now ({reason}); it was probably stopped or restarted. The "
            f"job goes on at its site: run `gridgate logs {job_id} -f` again once the "
            "gateway is back.")
        self.args = (self.message,)


class ReplayGone(ClientError):
    """An event stream resumed after an event older than the gateway replays: re-read
    the state (`list_jobs`, `get_job`), then follow from `last_event_id`."""

    def __init__(self, detail: str, last_event_id: str) -> None:
        super().__init__(detail)
        self.last_event_id = last_event_id


class AuthenticationRequired(ClientError):
    """The request needs a valid access token."""

    def __init__(self, message: str = "You are not logged in; run 'gridgate login'.") -> None:
        super().__init__(message)


class SessionExpired(AuthenticationRequired):
    """Both the access token and the refresh token are no longer usable."""

    def __init__(self, message: str = "Your session has expired; run 'gridgate login'.") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class FieldError:
    """One entry of a problem's `errors` list."""

    field: str
    message: str


class ProblemError(ClientError):
    """The gateway answered with an error; `problem` is the raw problem document."""

    def __init__(self, status: int, title: str, detail: str, *,
                 errors: list[FieldError] | None = None,
                 problem: dict[str, Any] | None = None) -> None:
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail
        self.errors = errors or []
        self.problem = problem or {}

    def __str__(self) -> str:
        return f"{self.title} ({self.status}): {self.detail}" if self.detail else self.title


class NotFoundError(ProblemError):
    """404."""


class ConflictError(ProblemError):
    """409."""


class ValidationFailed(ProblemError):
    """400 or 422: the request was refused; `errors` names the fields."""


def problem_error(status: int, body: Any, text: str = "") -> ProblemError:
    """The `ProblemError` subclass for an error response (problem+json or not)."""
    problem: dict[str, Any] = body if isinstance(body, dict) else {}
    phrase = _phrase(status)
    title = str(problem.get("title") or phrase)
    detail = problem.get("detail")
    if not isinstance(detail, str) or not detail:
        # Not a problem document (a proxy's HTML page, say): show its start.
        detail = " ".join(text.split())[:300] if text and not problem else ""
    if status >= 500 and detail in ("", phrase):
        detail = f"The gateway failed ({status} {phrase}); its log says why."
    errors = [
        FieldError(str(e.get("field", "")), str(e.get("message", "")))
        for e in problem.get("errors") or []
        if isinstance(e, dict)
    ]
    cls: type[ProblemError] = ProblemError
    if status == 404:
        cls = NotFoundError
    elif status == 409:
        cls = ConflictError
    elif status in (400, 422):
        cls = ValidationFailed
    return cls(status, title, detail, errors=errors, problem=problem)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def transport_reason(exc: httpx.TransportError) -> str:
    """A few words on why a connection failed."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    text = str(exc)
    if isinstance(exc, httpx.ConnectError) and "refused" in text.lower():
        return "connection refused"
    return text or type(exc).__name__
