"""Every error status a route's code can answer is in /openapi.json (issue 25 item 8: an
ended workflow's cancel answered 409, a grant for a missing project 404, neither listed).

schemathesis (test_schemathesis.py, `--checks all`) runs status_code_conformance, but only
on what its generated requests reach: a 409 there needs a workflow that has ended, a
grant's 404 an administrator's token. So each route's own code is read instead
(tests/api/route_statuses.py: the errors it raises and the problems it returns, through
the project's functions it calls), and every status found must be documented.
"""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from gateway.api.api_document import operation_id
from gateway.api.app import ROUTERS
from gateway.domain.errors import Conflict, GatewayError, TooLarge
from gateway.services.money.allocations import project_by_name
from tests.api.route_statuses import Via, route_statuses

# Statuses the reading finds on a path that cannot answer them, and why.
CANNOT_HAPPEN = {
    ("submitJob", 404): "a replayed Idempotency-Key names the caller's own job",
    ("createWorkflow", 404): "a replayed Idempotency-Key names the caller's own workflow",
    ("createProject", 404): "the administrator who created the project reads it back",
}


def _found() -> dict[str, dict[int, Via]]:
    return {operation_id(route): route_statuses(route.endpoint) for router in ROUTERS
            for route in router.routes if isinstance(route, APIRoute)}


def _documented(client: TestClient) -> dict[str, set[int]]:
    document: dict[str, Any] = client.get("/openapi.json").json()
    return {op["operationId"]: {int(status) for status in op["responses"]}
            for path in document["paths"].values() for op in path.values()}


def test_every_status_a_route_answers_is_documented(client: TestClient) -> None:
    documented = _documented(client)
    missing = [f"{op} {status} ({' > '.join(via)})" for op, found in _found().items()
               if op in documented for status, via in sorted(found.items())
               if status not in documented[op] and (op, status) not in CANNOT_HAPPEN]
    assert not missing, ("not in /openapi.json (add to api_document.EXTRA_STATUSES): "
                         + "; ".join(missing))
    assert {409} <= documented["cancelWorkflow"]
    assert {404} <= documented["grantAllocation"] & documented["transferAllocation"]


def _refuses() -> None:
    try:
        raise Conflict("caught here: never answered")
    except GatewayError:
        pass
    try:  # noqa: SIM105 (the reading knows `try`, as the gateway's code writes it)
        project_by_name(None, "x")  # type: ignore[arg-type]
    except Conflict:
        pass
    raise TooLarge("answered")


def test_the_reading_finds_what_it_should() -> None:
    assert route_statuses(_refuses) == {404: ("_refuses", "project_by_name"),
                                        413: ("_refuses",)}
    found = _found()
    # Each exception above is still found (else it goes).
    for op, status in CANNOT_HAPPEN:
        assert status in found[op], (op, status)
    assert found["cancelWorkflow"][409] == ("cancel_workflow", "cancel")
    assert found["grantAllocation"][404][-1] == "project_by_name"
    assert found["jobLogs"][416][-1] == "problem()"
    assert 404 not in found["listJobs"]
