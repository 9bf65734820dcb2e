"""The OpenAPI document as a client developer reads it: readable operation ids, the
security schemes behind /docs' Authorize button, every error documented as the problem
document the gateway sends, problem types a client can branch on, and /docs served from
the gateway's own assets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from gateway.api.problem_types import TYPES
from gateway.schemas.events import EVENT_TYPES
from tests.conftest import MakeUser

CAMEL = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]*)*")
PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method.upper(), path, op) for path, ops in document["paths"].items()
            for method, op in ops.items()]


def test_operation_ids_are_camel_case_and_unique(client: TestClient) -> None:
    operations = _operations(client.get("/openapi.json").json())
    ids = [op["operationId"] for _, _, op in operations]
    assert all(CAMEL.fullmatch(i) for i in ids), [i for i in ids if not CAMEL.fullmatch(i)]
    assert len(ids) == len(set(ids))
    by_route = {(method, path): op["operationId"] for method, path, op in operations}
    assert by_route[("POST", "/api/v1/jobs")] == "submitJob"
    assert by_route[("GET", "/api/v1/jobs")] == "listJobs"
    assert by_route[("GET", "/api/v1/jobs/{job_id}")] == "getJob"
    assert by_route[("POST", "/api/v1/jobs/{job_id}/cancel")] == "cancelJob"
    assert by_route[("POST", "/api/v1/allocations")] == "grantAllocation"


def test_security_schemes_give_oauth_flows_and_bearer(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    schemes = document["components"]["securitySchemes"]
    flows = schemes["oauth2"]["flows"]
    assert flows["clientCredentials"]["tokenUrl"] == "/oauth/token"
    assert flows["x-deviceAuthorization"]["deviceAuthorizationUrl"] == \
        "/oauth/device_authorization"
    assert set(flows["clientCredentials"]["scopes"]) == {"jobs:read", "jobs:write",
                                                         "sites:read"}
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    operations = {op["operationId"]: op for _, _, op in _operations(document)}
    assert operations["submitJob"]["security"] == [{"oauth2": ["jobs:write"]}, {"bearer": []}]
    assert operations["listSites"]["security"] == [{"oauth2": ["sites:read"]}, {"bearer": []}]
    assert "security" not in operations["health"]  # open to all


def test_every_error_response_is_a_problem_document(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in str(document)
    oauth = {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}}
    for method, path, op in _operations(document):
        for status, response in op["responses"].items():
            if not status.startswith(("4", "5")) or op["operationId"] == "health":
                continue
            # The OAuth endpoints answer their errors as RFC 6749 says.
            is_oauth = path.startswith("/oauth/") and status in ("400", "401", "429")
            assert response.get("content") == (oauth if is_oauth else PROBLEM), \
                (method, path, status)
        assert "422" in op["responses"] and "500" in op["responses"], (method, path)
    operations = {op["operationId"]: op["responses"] for _, _, op in _operations(document)}
    assert {"401", "403", "404"} <= set(operations["getJob"])
    assert {"409", "413", "422"} <= set(operations["submitJob"])
    assert "/problems/not-found" in operations["getJob"]["404"]["description"]
    assert "404" not in operations["listJobs"]  # no path parameter, nothing to miss
    assert "429" in operations["token"]  # too many wrong client secrets
    # health's 503 is its own document (status "degraded"), not a problem.
    assert operations["health"]["503"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/Health"}
    problem = document["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}


def test_problem_types_name_the_error(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    missing = client.get("/api/v1/jobs/nope", headers=user.headers)
    assert (missing.status_code, missing.json()["type"]) == (404, "/problems/not-found")
    invalid = client.get("/api/v1/jobs?limit=0", headers=user.headers)
    assert (invalid.status_code, invalid.json()["type"]) == (422, "/problems/validation")
    anonymous = client.get("/api/v1/jobs")
    assert anonymous.json()["type"] == "/problems/unauthenticated"
    made = client.post("/api/v1/uploads", json={"name": "a", "size": 4}, headers=user.headers)
    upload = made.json()["id"]
    late = client.put(f"/api/v1/uploads/{upload}", content=b"cd",
                      headers={**user.headers, "Content-Range": "bytes 2-3/4"})
    assert (late.status_code, late.json()["type"]) == (409, "/problems/conflict")
    too_big = client.post("/api/v1/jobs", content=b"x" * (2 << 20),
                          headers={**user.headers, "Content-Type": "application/json"})
    assert (too_big.status_code, too_big.json()["type"]) == (413, "/problems/too-large")


def test_a_problem_type_uri_describes_itself(client: TestClient) -> None:
    for kind in TYPES:
        page = client.get(kind.uri)
        assert page.status_code == 200 and page.text.startswith(f"{kind.uri}: {kind.status}")
    unknown = client.get("/problems/bogus")
    assert unknown.status_code == 404 and "not-found" in unknown.json()["detail"]


def test_docs_reference_only_the_gateways_own_assets(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    references = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(references) == 3 and "http" not in page.text.replace("http-equiv", "")
    for url in references:
        assert url.startswith("/docs/assets/"), url
        asset = client.get(url)
        assert asset.status_code == 200 and len(asset.content) > 500, url
    assert client.get("/docs/assets/swagger-ui-bundle.js").headers["content-type"].startswith(
        "text/javascript")
    assert client.get("/docs/assets/..%2Fmain.py").status_code == 404
    assert client.get("/docs/oauth2-redirect").status_code == 200
    assert client.get("/redoc").status_code == 404  # ReDoc exists only on a CDN


def test_the_docs_list_every_problem_type() -> None:
    readme = (Path(__file__).parents[2] / "docs" / "reference" / "conventions.md").read_text()
    for kind in TYPES:
        assert f"| `{kind.uri}` | {kind.status} |" in readme, kind.uri


def test_the_event_stream_documents_each_cloud_event(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    ok = document["paths"]["/api/v1/events"]["get"]["responses"]["200"]["content"]
    refs = [one["$ref"] for one in ok["text/event-stream"]["schema"]["oneOf"]]
    schemas = document["components"]["schemas"]
    documented = {}
    for ref in refs:
        event = schemas[ref.rsplit("/", 1)[1]]
        assert event["properties"]["specversion"]["const"] == "1.0"
        assert event["description"]
        data = schemas[event["properties"]["data"]["$ref"].rsplit("/", 1)[1]]
        assert data["description"], f"{ref}: its data is not described"
        documented[event["properties"]["type"]["const"]] = set(data["properties"])
    assert set(documented) == set(EVENT_TYPES)  # one by one, each type
    assert "CloudEvents 1.0" in schemas["JobStateEvent"]["description"]
    assert {"from", "to", "reason", "raw_state", "actor", "job"} <= documented[
        "org.gridgate.job.state"]
    assert {"threshold_percent", "used_su", "awarded_su", "project"} <= documented[
        "org.gridgate.allocation.usage"]
    assert documented["org.gridgate.job.staging"] == {
        "direction", "path", "bytes_done", "bytes_total", "done", "error", "job"}
    assert schemas["EventJob"]["description"]
