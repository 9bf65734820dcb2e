"""The gateway's error hierarchy. No HTTP codes here: the API maps these in one place."""

from __future__ import annotations

from typing import Any


class GatewayError(Exception):
    """Base of every error the gateway reports to a person.

    `detail` is a sentence a person can act on; `extra` lands in the problem document.
    """

    title = "Gateway error"

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class NotFound(GatewayError):
    """The thing does not exist, or belongs to someone else (indistinguishable on purpose)."""

    title = "Not found"


class Invalid(GatewayError):
    """The request is well-formed but cannot be satisfied as asked."""

    title = "Invalid request"


class Conflict(GatewayError):
    """The request conflicts with the current state (e.g. cancelling a finished job)."""

    title = "Conflict"


class Unauthenticated(GatewayError):
    """No valid credentials were presented."""

    title = "Unauthenticated"


class Forbidden(GatewayError):
    """Credentials are valid but do not allow this."""

    title = "Forbidden"


class Unavailable(GatewayError):
    """A dependency (site, database) is down; trying again later may work."""

    title = "Service unavailable"


class TooLarge(GatewayError):
    """A body, file or quota limit was exceeded."""

    title = "Too large"
