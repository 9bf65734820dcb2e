"""The problem `type` URIs: one name per kind of error, so clients branch on `type`.

A type is the relative reference `/problems/NAME` (RFC 9457 3.1.1): it resolves against
the gateway's own URL, where `GET /problems/NAME` describes it, and it reads the same on
every deployment, so a client can compare it as a constant string.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "/problems/"


@dataclass(frozen=True)
class ProblemType:
    """One kind of error: its name (the URI's last segment), status and meaning."""

    name: str
    status: int
    meaning: str

    @property
    def uri(self) -> str:
        return PREFIX + self.name


TYPES: tuple[ProblemType, ...] = (
    ProblemType("bad-request", 400, "The request could not be read (e.g. a chunk upload "
                "whose client went away before its body arrived)."),
    ProblemType("unauthenticated", 401, "No valid access token: log in again "
                "(`WWW-Authenticate` says how)."),
    ProblemType("forbidden", 403, "The token is valid but lacks the scope or role this "
                "needs."),
    ProblemType("not-found", 404, "No such resource, or one you may not see (another "
                "user's job reads exactly like a missing one)."),
    ProblemType("conflict", 409, "The resource's state does not allow this now (an upload "
                "at another offset, a name already taken, a job already final)."),
    ProblemType("replay-window", 410, "An event stream was resumed from an event older "
                "than the replay window: re-read the state, then follow new events."),
    ProblemType("too-large", 413, "The body, a file or a quota limit is exceeded; the "
                "problem names the limit."),
    ProblemType("range-not-satisfiable", 416, "The requested range or offset lies past "
                "the end of a file that will not grow."),
    ProblemType("validation", 422, "The request is well-formed but invalid: `errors` "
                "lists each field (`field`, `message`)."),
    ProblemType("site-rejected", 422, "The site's scheduler refused the job as "
                "submitted."),
    ProblemType("too-many-requests", 429, "A per-user limit is reached; retry after "
                "`Retry-After` seconds."),
    ProblemType("internal", 500, "A bug on the gateway's side; `incident` names the log "
                "entry to report."),
    ProblemType("site-error", 502, "A site answered wrongly (including a changed host "
                "key)."),
    ProblemType("unavailable", 503, "The gateway's database, a site or a capacity limit "
                "is unavailable for now; retry (after `Retry-After` when given)."),
    ProblemType("site-timeout", 504, "A site did not answer in time; retry later."),
)

BY_NAME = {t.name: t for t in TYPES}
# The first type listed for a status is its default.
BY_STATUS: dict[int, ProblemType] = {}
for _type in TYPES:
    BY_STATUS.setdefault(_type.status, _type)


def uri_for(status: int) -> str:
    """The type URI of an error with this status (`about:blank` for one not listed)."""
    known = BY_STATUS.get(status)
    return known.uri if known else "about:blank"
