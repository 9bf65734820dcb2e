"""Who the caller is, as the API sends it (GET /api/v1/me)."""

from __future__ import annotations

from typing_extensions import TypedDict


class MeOut(TypedDict):
    """The caller as the gateway knows them from their access token: the account jobs
    are owned by, who vouched for it (`issuer`, `subject`), and what the token may do."""

    user: str  # the gateway username (else the token's subject): jobs' `owner`
    issuer: str
    subject: str
    scopes: list[str]
    roles: list[str]
