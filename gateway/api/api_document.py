"""The OpenAPI document, set once for every route: readable operation ids, the security
schemes (so /docs has an Authorize button), and each error response documented with the
problem-document schema the gateway really sends.

Routes declare only what is theirs (their success response, the odd extra status in
`EXTRA_STATUSES`); everything else is derived here from what a route has: a scope check
(401, 403), path parameters (404), a body (413), a site to reach (502-504).
tests/api/test_documented_statuses.py reads every route's code for the statuses it can
answer and fails on one missing here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, APIRouter

from gateway.api.deps import ScopeCheck
from gateway.api.problem_types import TYPES
from gateway.schemas import adapter
from gateway.schemas.events import EVENT_DOCUMENTS
from gateway.schemas.problems import Problem

PROBLEM_JSON = "application/problem+json"
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
SCOPES = {
    "jobs:read": "Read your jobs, uploads, projects and reports.",
    "jobs:write": "Submit and cancel jobs, upload files, manage projects.",
    "sites:read": "List the sites and their load.",
}
# Documents of event streams: referenced by their routes' text/event-stream responses.
STREAMED_DOCUMENTS = EVENT_DOCUMENTS
# Statuses a route returns beyond the derived ones, by operation id.
EXTRA_STATUSES: dict[str, tuple[int, ...]] = {
    "submitJob": (409, 413),
    # No signed tree head yet; a consistency proof between sizes the gateway never signed.
    "latestTreeHead": (404,),
    "consistency": (404,),
    "cancelJob": (409,),
    "cancelTask": (409,),
    # An input given inline is kept as an upload: its part file gone (404) or written to
    # by another request at once (409), as for PUT /uploads/{id}.
    "createTask": (404, 409),
    "cancelJobArray": (409,),
    "cancelWorkflow": (409,),
    "holdJob": (409,),
    "releaseJob": (409,),
    "estimateJob": (502, 503, 504),
    "jobLogs": (416, 429, 502, 503, 504),
    # A `job` filter naming a job that is not the caller's reads as missing.
    "streamEvents": (404, 429, 503),
    "createWebhook": (404,),  # likewise a `jobs` filter
    "downloadOutput": (416, 502, 503, 504),
    "createUpload": (409, 413),
    "putChunk": (400, 409, 413),
    "completeUpload": (409,),
    "deleteUpload": (409,),
    "createProject": (409,),
    "addMember": (409,),
    "removeMember": (409,),
    "deleteOutputs": (409,),
    # The project or allocations named in the body may not exist.
    "grantAllocation": (404,),
    "transferAllocation": (404,),
    # A `project` filter names a project that may not exist (or not be yours).
    "listAllocations": (404,),
    "allocationsReport": (404,),
    "usageReport": (404,),
    "waitsReport": (404,),
    "adjustmentsReport": (404,),
    "usageByJob": (404,),
}
# The OAuth endpoints answer errors as RFC 6749 5.2 says, not as problem documents.
# 429: too many wrong client secrets for the client or from the address.
OAUTH_ERRORS = {"token": (400, 401, 429), "deviceAuthorization": (400, 401, 429),
                "revoke": (400, 401, 429)}
OAUTH_ERROR = {
    "type": "object", "title": "OAuthError", "required": ["error"],
    "properties": {"error": {"type": "string", "examples": ["invalid_client"]},
                   "error_description": {"type": "string"}},
}


def operation_id(route: APIRoute) -> str:
    """`submit_job` -> `submitJob`: the route function's name, in camelCase."""
    head, *rest = route.name.split("_")
    return head + "".join(word.capitalize() for word in rest)


def _scopes(dependant: Dependant) -> list[str]:
    found = [dependant.call.scope] if isinstance(dependant.call, ScopeCheck) else []
    for sub in dependant.dependencies:
        found += _scopes(sub)
    return found


def _query_names(route: APIRoute) -> set[str]:
    return {field.alias for field in route.dependant.query_params}


def _error_statuses(route: APIRoute, scopes: list[str]) -> set[int]:
    # 422: any request text with a NUL (headers included) or failing validation; 500: a
    # bug; 503: the database unreachable.
    statuses = {422, 500, 503}
    if scopes:
        statuses |= {401, 403}
    # A path names a resource that may not exist (or be invisible to the caller, which
    # reads the same).
    if route.dependant.path_params:
        statuses.add(404)
    if route.body_field is not None:
        # 400: a body that is not text at all (not UTF-8); 413: over the size limit.
        statuses |= {400, 413}
    statuses.update(EXTRA_STATUSES.get(operation_id(route), ()))
    return statuses


def _problem_response(status: int) -> dict[str, Any]:
    names = ", ".join(f"`{t.uri}`" for t in TYPES if t.status == status)
    description = HTTPStatus(status).phrase + (f" (problem type {names})" if names else "")
    return {"description": description,
            "content": {PROBLEM_JSON: {"schema": PROBLEM_REF}}}


def _security_schemes(device_url: str, token_url: str) -> dict[str, Any]:
    return {
        "oauth2": {
            "type": "oauth2",
            "description": "People log in with the device flow (RFC 8628: `gridgate "
                           "login`), services with client credentials. OpenAPI 3.1 has no "
                           "device flow: `x-deviceAuthorization` gives its endpoints, as "
                           "OpenAPI 3.2's `deviceAuthorization` does.",
            "flows": {
                "clientCredentials": {"tokenUrl": token_url, "scopes": SCOPES},
                "x-deviceAuthorization": {"deviceAuthorizationUrl": device_url,
                                          "tokenUrl": token_url, "scopes": SCOPES},
            },
        },
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                   "description": "An access token from /oauth/token, as "
                                  "`Authorization: Bearer <token>`."},
    }


# gateway.api.http.nul_guard refuses NUL in every request text; the document says so.
NO_NUL = r"^[^\u0000]*$"
_CONSTRAINED = {"pattern", "enum", "const", "format"}


def _forbid_nul(schema: dict[str, Any], schemas: dict[str, Any], seen: set[str]) -> None:
    """Give every request string (and object key) without a rule of its own the NUL
    rule, following references once each."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name not in seen:
            seen.add(name)
            _forbid_nul(schemas[name], schemas, seen)
        return
    if schema.get("type") == "string" and not _CONSTRAINED & schema.keys():
        schema["pattern"] = NO_NUL
    if schema.get("type") == "object" and schema.get("additionalProperties", True):
        schema.setdefault("propertyNames", {"pattern": NO_NUL})
    subschemas = [*schema.get("anyOf", []), *schema.get("oneOf", []),
                  *schema.get("allOf", []), *schema.get("properties", {}).values()]
    subschemas += [schema[key] for key in ("items", "additionalProperties")
                   if isinstance(schema.get(key), dict)]
    for sub in subschemas:
        _forbid_nul(sub, schemas, seen)


def _request_schemas(operation: dict[str, Any]) -> list[dict[str, Any]]:
    found = [p["schema"] for p in operation.get("parameters", []) if "schema" in p]
    for media in operation.get("requestBody", {}).get("content", {}).values():
        found += [media["schema"]] if "schema" in media else []
    return found


def _complete(document: dict[str, Any], routes: Iterable[APIRoute],
              maxima: dict[tuple[str, str], int]) -> None:
    operations = {op["operationId"]: op for path in document["paths"].values()
                  for op in path.values()}
    for route in routes:
        operation = operations.get(operation_id(route))
        if operation is None:  # not in the schema
            continue
        scopes = _scopes(route.dependant)
        if scopes:
            operation["security"] = [{"oauth2": scopes}, {"bearer": []}]
        responses = operation.setdefault("responses", {})
        if "format" in _query_names(route):  # reports: `format=csv` (or Accept: text/csv)
            responses["200"].setdefault("content", {})["text/csv"] = {
                "schema": {"type": "string"}}
        for status in OAUTH_ERRORS.get(operation_id(route), ()):
            responses[str(status)] = {
                "description": HTTPStatus(status).phrase + " (an OAuth error, RFC 6749 5.2)",
                "content": {"application/json": {"schema": {
                    "$ref": "#/components/schemas/OAuthError"}}}}
        for status in sorted(_error_statuses(route, scopes)):
            documented = responses.setdefault(str(status), {})
            content = documented.get("content", {})
            if not content or "HTTPValidationError" in str(content):
                # A route's own body for a status (health's 503) stays; FastAPI's
                # validation error, which the gateway never sends, goes.
                documented.update(_problem_response(status))
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    seen: set[str] = set()
    for operation in operations.values():
        for schema in _request_schemas(operation):
            _forbid_nul(schema, schemas, seen)
    for (model, field), maximum in maxima.items():
        schemas[model]["properties"][field]["maximum"] = maximum
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    problem_schema = adapter(Problem).json_schema(
        mode="serialization", ref_template="#/components/schemas/{model}")
    schemas.update(problem_schema.pop("$defs", {}))
    schemas["Problem"] = problem_schema
    for streamed in STREAMED_DOCUMENTS:  # documents sent inside text/event-stream
        streamed_schema = adapter(streamed).json_schema(
            mode="serialization", ref_template="#/components/schemas/{model}")
        schemas.update(streamed_schema.pop("$defs", {}))
        schemas[streamed.__name__] = streamed_schema
    schemas["OAuthError"] = OAUTH_ERROR
    document["components"]["securitySchemes"] = _security_schemes(
        "/oauth/device_authorization", "/oauth/token")


def install(app: FastAPI, routers: Iterable[APIRouter],
            maxima: dict[tuple[str, str], int] | None = None) -> None:
    """Make `app.openapi()` return the completed document (built once, then cached).
    `maxima` are limits set by configuration: (schema, property) -> maximum."""
    routes = [route for router in routers for route in router.routes
              if isinstance(route, APIRoute)]
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        document = build()
        if "securitySchemes" not in document.get("components", {}):
            _complete(document, routes, maxima or {})
        return document

    app.openapi = openapi  # type: ignore[method-assign]
