"""A Python client of the gridgate REST API, used by the CLI and by scripts.

    from gateway.client import GatewayClient, StoredTokenProvider
    with GatewayClient(url, StoredTokenProvider(url)) as gw:
        job = gw.submit({"name": "hello", "executable": "hostname"})
        gw.wait(job["id"])

The names below are imported on first use (PEP 562), so importing one light module
of the package (`gateway.client.errors`) does not load httpx and pydantic.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient, TokenProvider
    from gateway.client.credentials import Credentials, CredentialStore, StoredTokenProvider
    from gateway.client.errors import (
        AmbiguousJobId,
        AuthenticationRequired,
        ClientError,
        ConflictError,
        FieldError,
        GatewayUnreachable,
        NotFoundError,
        ProblemError,
        ReplayGone,
        SessionExpired,
        ValidationFailed,
    )
    from gateway.client.models import Event, Health, Job, JobPage, Output, Site, is_final
    from gateway.client.oauth import AuthorizationServer, OAuthError
    from gateway.client.urls import DEFAULT_GATEWAY_URL

_WHERE = {
    "gateway.client.api": ("GatewayClient", "TokenProvider"),
    "gateway.client.urls": ("DEFAULT_GATEWAY_URL",),
    "gateway.client.credentials": ("Credentials", "CredentialStore", "StoredTokenProvider"),
    "gateway.client.errors": ("AmbiguousJobId", "AuthenticationRequired", "ClientError",
                              "ConflictError", "FieldError", "GatewayUnreachable", "NotFoundError",
                              "ProblemError", "ReplayGone", "SessionExpired",
                              "ValidationFailed"),
    "gateway.client.models": ("Event", "Health", "Job", "JobPage", "Output", "Site",
                              "is_final"),
    "gateway.client.oauth": ("AuthorizationServer", "OAuthError"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "DEFAULT_GATEWAY_URL",
    "AmbiguousJobId",
    "AuthenticationRequired",
    "AuthorizationServer",
    "ClientError",
    "ConflictError",
    "CredentialStore",
    "Credentials",
    "Event",
    "FieldError",
    "GatewayClient",
    "GatewayUnreachable",
    "Health",
    "Job",
    "JobPage",
    "NotFoundError",
    "OAuthError",
    "Output",
    "ProblemError",
    "ReplayGone",
    "SessionExpired",
    "Site",
    "StoredTokenProvider",
    "TokenProvider",
    "ValidationFailed",
    "is_final",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'gateway.client' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
