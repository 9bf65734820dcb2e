"""One set of API documents: the server documents and sends `gateway.schemas`, and the
client reads every response with the same types, keeping every field the server sent.

A field added to a shared schema is therefore sent and kept with no other edit; a
response model private to the server, or a client type that drifts from the server's,
fails here.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

import gateway.schemas.audit
import gateway.schemas.identity
import gateway.schemas.jobs
import gateway.schemas.placements
import gateway.schemas.projects
import gateway.schemas.reports
import gateway.schemas.sites
import gateway.schemas.uploads
import gateway.schemas.webhooks
import gateway.schemas.workflows
from gateway.cli.render import print_json
from gateway.client import GatewayClient
from gateway.schemas import adapter, parse
from gateway.schemas.audit import JobStoryOut
from gateway.schemas.identity import MeOut
from gateway.schemas.jobs import EventList, JobList, JobOut, JobOutputList
from gateway.schemas.placements import EstimateOut, PlacementOut
from gateway.schemas.sites import Health, SiteList
from gateway.schemas.uploads import UploadList, UploadOut
from tests.conftest import MakeUser

SHARED = {name: value for module in (gateway.schemas.jobs, gateway.schemas.placements,
                                     gateway.schemas.projects, gateway.schemas.sites,
                                     gateway.schemas.uploads, gateway.schemas.reports,
                                     gateway.schemas.audit, gateway.schemas.identity,
                                     gateway.schemas.workflows, gateway.schemas.webhooks)
          for name, value in vars(module).items()
          if name.endswith(("Out", "List", "Report")) or name == "Health"}


def _json_refs(operation: dict[str, Any]) -> list[str]:
    """The component names of an operation's JSON success responses."""
    refs = []
    for status, response in operation.get("responses", {}).items():
        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
        if status.startswith("2") and "$ref" in schema:
            refs.append(schema["$ref"].rsplit("/", 1)[1])
    return refs


def test_every_documented_response_is_a_shared_schema(client: TestClient) -> None:
    documented = {
        (method.upper(), path): ref
        for path, operations in client.app.openapi()["paths"].items()  # type: ignore[attr-defined]
        for method, operation in operations.items()
        for ref in _json_refs(operation)
    }
    assert documented[("GET", "/api/v1/jobs/{job_id}")] == "JobOut"
    assert documented[("GET", "/api/v1/uploads")] == "UploadList"
    private = {key: ref for key, ref in documented.items() if ref not in SHARED}
    assert not private, f"responses documented with server-only models: {private}"
    components = client.app.openapi()["components"]["schemas"]  # type: ignore[attr-defined]
    for ref in set(documented.values()):
        # The very schema of the shared type, not a server twin of the same name.
        shared = adapter(SHARED[ref]).json_schema(
            mode="serialization", ref_template="#/components/schemas/{model}")
        shared.pop("$defs", None)
        assert components[ref] == shared, ref


class _Recording(httpx.BaseTransport):
    """The in-process app as the client's transport, keeping each raw response body.

    The request goes through the TestClient (Starlette's, built on httpx2) and its answer
    comes back as an httpx response, the library the gateway's client uses."""

    def __init__(self, app: TestClient) -> None:
        self.app = app
        self.bodies: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.app.request(request.method, str(request.url),
                                  headers=list(request.headers.multi_items()),
                                  content=request.read())
        self.bodies.append(answer.content)
        return httpx.Response(answer.status_code, headers=list(answer.headers.multi_items()),
                              content=answer.content, request=request)


@pytest.mark.parametrize("call", ["submit", "get_job", "list_jobs", "cancel", "events",
                                  "sites", "health", "create_upload", "put_chunk",
                                  "complete_upload", "get_upload", "list_uploads",
                                  "job_outputs", "estimate", "placement", "audit_job", "me"])
def test_the_client_keeps_every_field_the_server_sends(
        client: TestClient, make_user: MakeUser, call: str) -> None:
    user = make_user()
    recording = _Recording(client)
    data = b"shared schemas\n"
    digest = hashlib.sha256(data).hexdigest()
    with GatewayClient("http://testserver", lambda: user.token, transport=recording) as gw:
        job = gw.submit({"name": "docs", "executable": "/bin/echo", "labels": {"k": "v"}})
        upload = gw.create_upload("in.txt", len(data), digest)
        calls: dict[str, tuple[Any, Callable[[], Any]]] = {
            "submit": (JobOut, lambda: job),
            "get_job": (JobOut, lambda: gw.get_job(job["id"])),
            "list_jobs": (JobList, lambda: gw.list_jobs()),
            "cancel": (JobOut, lambda: gw.cancel(job["id"])),
            "events": (EventList, lambda: {"items": gw.events(job["id"]),
                                      "next_cursor": None}),
            "sites": (SiteList, lambda: {"items": gw.sites(), "next_cursor": None}),
            "health": (Health, lambda: gw.health()),
            "create_upload": (UploadOut, lambda: upload),
            "put_chunk": (UploadOut, lambda: gw.put_chunk(upload["id"], data, 0, len(data))),
            "complete_upload": (UploadOut, lambda: (
                gw.put_chunk(upload["id"], data, 0, len(data)),
                gw.complete_upload(upload["id"], digest))[1]),
            "get_upload": (UploadOut, lambda: gw.get_upload(upload["id"])),
            "list_uploads": (UploadList, lambda: {"items": gw.list_uploads(),
                                                   "next_cursor": None}),
            "job_outputs": (JobOutputList, lambda: {"items": gw.job_outputs(job["id"]),
                                                 "next_cursor": None}),
            "estimate": (EstimateOut, lambda: gw.estimate({"name": "e", "executable": "x"})),
            "placement": (PlacementOut, lambda: gw.placement(gw.submit(
                {"name": "p", "executable": "x", "site": "local"})["id"])),
            "audit_job": (JobStoryOut, lambda: gw.audit_job(job["id"])),
            "me": (MeOut, lambda: gw.me()),
        }
        schema, fetch = calls[call]
        document = fetch()
    sent = recording.bodies[{"submit": 0, "create_upload": 1}.get(call, -1)]
    # The client read the server's bytes with the shared schema (timestamps as datetimes).
    assert document == parse(schema, json.loads(sent))
    printed = io.StringIO()
    with redirect_stdout(printed):
        print_json(document)
    # What `--json` prints is what the server sent, field for field and byte for byte.
    assert printed.getvalue() == json.dumps(json.loads(sent), indent=2, ensure_ascii=False) + "\n"
