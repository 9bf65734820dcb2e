"""Every error the gateway reports to a person, in one tree, with what the API answers.

    GatewayError               500 internal    the base (never raised); `detail` says what to do
    ├── NotFound               404 not-found   no such thing, or another user's (alike on purpose)
    │   └── NotPlaced          404 not-found   not yet placed by routing (services.jobs.queries)
    ├── Invalid                422 validation  well-formed, but not possible as asked
    │   ├── SiteConfigError    422 validation  an unusable site config (siteconfig.errors)
    │   ├── NoAccount          422 validation  no account there for the user (services.sites.entry)
    │   │   └── NotIsolated    422 validation  takes only its owner's jobs (services.sites.entry)
    │   ├── InsufficientFunds  422 validation  no allocation can pay (services.money.bank)
    │   └── FileUrlRefused     422 validation  not the user's file:// (services.data.file_urls)
    ├── Conflict               409 conflict    the state does not allow it now (e.g. a final job)
    │   └── OffsetMismatch     409 conflict    a chunk at the wrong offset (services.data.uploads)
    ├── Unauthenticated        401 unauthenticated no valid token; `WWW-Authenticate` says how
    ├── Forbidden              403 forbidden   a valid token that does not allow this
    ├── Unavailable            503 unavailable a site or the database is down; try again later
    ├── TooLarge               413 too-large   a body, file or quota limit is exceeded
    ├── InputUnavailable       500 internal    input cannot be staged (services.data.input_sources)
    │   └── RegistryPullFailed 500 internal    image pull failed (services.images.registry_client)
    ├── StageOutFailed         500 internal    outputs not collected (worker.staging.stage_out)
    ├── PutFailed              500 internal    a PUT of an output refused (services.data.https_put)
    ├── DeliveryFailed         500 internal    outputs not sent where asked (worker.staging.deliver)
    └── ContainerRefused       500 internal    not launchable now (worker.staging.container_launch)

A line: the class, the status and problem type (`/problems/NAME`) the API answers it with,
what it means, and the module under `gateway` that defines it when not this one. No HTTP in
the classes: gateway/api/problems.py maps them in one place (`status_of`, by class; the type
is the status's own), and a class it does not list is answered 500, as a bug. The last six
are the worker's: it records their `detail` as the attempt's reason, and no route raises
them. tests/domain/test_error_tree.py checks this drawing against the classes.
"""

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
