"""GET /api/v1/jobs with hostile query input: forged cursors and label filters end in a
4xx problem, and the label filter query keeps one shape however many filters it has."""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from gateway.runtime import Runtime
from gateway.services.jobs import queries as job_queries
from gateway.services.jobs.queries import MAX_LABEL_FILTERS, JobFilter
from tests.api.test_jobs_api import submit
from tests.conftest import MakeUser


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


FORGED_CURSORS = {
    "date without a time zone": _cursor(["2026-01-01T00:00:00", str(uuid.uuid4())]),
    "id that is not a job id": _cursor(["2026-01-01T00:00:00+00:00", "x' OR 1=1"]),
    "object instead of a pair": _cursor({"a": 1, "b": 2}),
    "three parts": _cursor(["2026-01-01T00:00:00+00:00", str(uuid.uuid4()), 3]),
    "numbers": _cursor([1, 2]),
    "date out of range once in UTC": _cursor(["0001-01-01T00:00:00+01:00", str(uuid.uuid4())]),
    "not base64": "%%%",
    "not ASCII": "é",
    "not UTF-8 inside": base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    "too long": "A" * 600,
}


@pytest.mark.parametrize("cursor", FORGED_CURSORS.values(), ids=FORGED_CURSORS.keys())
def test_forged_cursor_is_a_problem_naming_the_cursor(client: TestClient, make_user: MakeUser,
                                                       cursor: str) -> None:
    user = make_user()
    submit(client, user.headers)
    r = client.get("/api/v1/jobs", params={"cursor": cursor}, headers=user.headers)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert "cursor" in r.text


def test_label_filters_are_capped(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    submit(client, user.headers, labels={"k0": "v"})
    most = [f"k{i}=v" for i in range(MAX_LABEL_FILTERS)]
    assert client.get("/api/v1/jobs", params={"label": most},
                      headers=user.headers).status_code == 200
    r = client.get("/api/v1/jobs", params={"label": [*most, "one=more"]}, headers=user.headers)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "label"
    assert f"At most {MAX_LABEL_FILTERS} label filters" in r.json()["detail"]
    many = client.get("/api/v1/jobs", params={"label": ["k=v"] * 1000}, headers=user.headers)
    assert many.status_code == 422


def test_label_filters_all_have_to_match(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    both = submit(client, user.headers, labels={"a": "1", "b": "2"})["id"]
    only_a = submit(client, user.headers, labels={"a": "1", "b": "3"})["id"]
    submit(client, user.headers, labels={})

    def ids(*labels: str) -> set[object]:
        r = client.get("/api/v1/jobs", params={"label": list(labels)}, headers=user.headers)
        assert r.status_code == 200, r.text
        return {job["id"] for job in r.json()["items"]}

    assert ids("a=1") == {both, only_a}
    assert ids("a=1", "b=2") == {both}
    assert ids("a=1", "a=1", "b=2") == {both}, "a repeated filter is still one condition"
    assert ids("a=1", "a=2") == set(), "one key cannot hold two values"
    assert ids("a=1", "c=1") == set()


def _statements(runtime: Runtime, principal: Any, labels: tuple[tuple[str, str], ...]
                ) -> list[str]:
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):  # not SQLite's BEGIN
            seen.append(statement)

    event.listen(runtime.reader_engine, "before_cursor_execute", record)
    try:
        with runtime.reading() as conn:
            # `mine`: only the page's statement (without it, the projects a PI reads
            # are looked up first, in one statement of their own).
            job_queries.list_jobs(conn, principal, JobFilter(labels=labels, mine=True),
                                  limit=10, cursor=None)
    finally:
        event.remove(runtime.reader_engine, "before_cursor_execute", record)
    return seen


def _shape(statement: str) -> dict[str, int]:
    words = re.findall(r"[A-Z_]+", statement.upper())
    return {word: words.count(word) for word in ("SELECT", "JOIN", "EXISTS", "GROUP", "IN")}


def test_label_filter_query_has_one_shape_for_any_number_of_filters(
        runtime: Runtime, make_user: MakeUser) -> None:
    principal = make_user().principal
    one = _statements(runtime, principal, (("k0", "v"),))
    most = _statements(runtime, principal,
                       tuple((f"k{i}", "v") for i in range(MAX_LABEL_FILTERS)))
    assert len(one) == len(most) == 1, "one statement, whatever the number of filters"
    assert _shape(one[0]) == _shape(most[0])
    assert _shape(one[0])["SELECT"] == 2 and _shape(one[0])["EXISTS"] == 0
