"""The user a benchmark acts as: a local researcher and a signed access token for it."""

from __future__ import annotations

from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.runtime import Runtime


def researcher_token(runtime: Runtime, name: str = "bench") -> tuple[str, str]:
    """A new local researcher `name` and an access token for it: (user id, token)."""
    with transaction(runtime.sessions) as session:
        user_id = create_local_user(session, name, "bench-password-1").id
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="bench", scope="jobs:read jobs:write",
                               username=name).token
    return user_id, token
