"""A Python client of the gridgate REST API, used by the CLI and by scripts.

    from gateway.client import GatewayClient, StoredTokenProvider
    with GatewayClient(url, StoredTokenProvider(url)) as gw:
        job = gw.submit({"name": "hello", "executable": "hostname"})
        gw.wait(job["id"])
"""

from gateway.client.api import DEFAULT_GATEWAY_URL, GatewayClient, TokenProvider
from gateway.client.credentials import Credentials, CredentialStore, StoredTokenProvider
from gateway.client.errors import (
    AuthenticationRequired,
    ClientError,
    ConflictError,
    FieldError,
    GatewayUnreachable,
    NotFoundError,
    ProblemError,
    SessionExpired,
    ValidationFailed,
)
from gateway.client.models import Event, Health, Job, JobPage, Output, Site, is_final
from gateway.client.oauth import AuthorizationServer, OAuthError

__all__ = [
    "DEFAULT_GATEWAY_URL",
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
    "SessionExpired",
    "Site",
    "StoredTokenProvider",
    "TokenProvider",
    "ValidationFailed",
    "is_final",
]
