"""The portal's session: an access token in an HttpOnly, SameSite=Strict cookie that
the API accepts in place of `Authorization: Bearer`.

Requests that change something (any method but GET and HEAD) must also carry the
session's CSRF token in `X-CSRF-Token`. It is derived from the session token, so it
needs no storage; the page embeds it, and another site can neither read it nor make a
browser send the strict cookie.
"""

from __future__ import annotations

import hashlib
import hmac

from fastapi import Request

from gateway.domain.errors import Forbidden

COOKIE = "gridgate_portal"
CSRF_HEADER = "x-csrf-token"
# A portal session may read and write jobs and read sites: what a researcher does.
SCOPE = "jobs:read jobs:write sites:read"
SAFE_METHODS = frozenset({"GET", "HEAD"})


def csrf_token(session_token: str) -> str:
    """The CSRF token of one session (a keyed digest of its secret token)."""
    return hmac.new(b"gridgate-portal-csrf", session_token.encode(), hashlib.sha256).hexdigest()


def token_of(request: Request) -> str | None:
    """The session token of a portal request, if it has one; Forbidden when a request
    that changes something lacks the session's CSRF token."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    if request.method not in SAFE_METHODS and not hmac.compare_digest(
            request.headers.get(CSRF_HEADER, "").encode(), csrf_token(token).encode()):
        raise Forbidden("This request came with the portal's session but without its "
                        "CSRF token (X-CSRF-Token); reload the portal page and try again.")
    return token
