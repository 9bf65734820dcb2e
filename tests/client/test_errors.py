"""Error responses become the documented exception classes."""

from __future__ import annotations

import pytest

from gateway.client.errors import (
    ClientError,
    ConflictError,
    NotFoundError,
    ProblemError,
    ValidationFailed,
    problem_error,
)


@pytest.mark.parametrize(("status", "cls"), [
    (404, NotFoundError), (409, ConflictError), (422, ValidationFailed),
    (400, ValidationFailed), (403, ProblemError), (503, ProblemError),
])
def test_status_picks_the_class(status: int, cls: type[ProblemError]) -> None:
    err = problem_error(status, {"title": "T", "status": status, "detail": "D"})
    assert type(err) is cls
    assert isinstance(err, ClientError)
    assert (err.status, err.title, err.detail) == (status, "T", "D")


def test_field_errors_are_kept() -> None:
    body = {"title": "Invalid request", "status": 422, "detail": "bad",
            "errors": [{"field": "environment", "message": "LD_PRELOAD is not allowed"},
                       "junk"]}
    err = problem_error(422, body)
    assert [(e.field, e.message) for e in err.errors] == [
        ("environment", "LD_PRELOAD is not allowed")]
    assert err.problem == body
    assert str(err) == "Invalid request (422): bad"


def test_non_problem_error_page_is_summarised() -> None:
    err = problem_error(502, None, "<html>\n<body>Bad   gateway from proxy</body></html>")
    assert err.title == "Bad Gateway"
    assert "Bad gateway from proxy" in err.detail


def test_bare_server_error_says_where_to_look() -> None:
    err = problem_error(500, None, "Internal Server Error")
    assert err.detail == "The gateway failed (500 Internal Server Error); its log says why."
    assert problem_error(599, {}).title == "HTTP 599"
