"""Paths relative to a job directory as workflows check them, held to the gateway's job-path
rule."""

from __future__ import annotations

import pytest

from gateway.domain.staging import check_job_path
from workflows.paths import is_pattern, path_problem


@pytest.mark.parametrize(("path", "problem"), [
    ("a/b.txt", None),
    ("out/*.json", None),
    ("", "is empty: give a path relative to the job directory"),
    ("/etc/passwd", "is absolute: give a path relative to the job directory"),
    ("~/.ssh/id", "starts with '~' (a home directory): give a path relative to the job "
                  "directory"),
    ("a/../../b", "has a '..' name: it would leave the job directory"),
    ("..", "has a '..' name: it would leave the job directory"),
    ("a//b", "has an empty or '.' name (no '//', './' or trailing '/')"),
    ("./a", "has an empty or '.' name (no '//', './' or trailing '/')"),
    ("a/", "has an empty or '.' name (no '//', './' or trailing '/')"),
    ("a\nb", "holds a control character (NUL, newline, ...)"),
    ("a\x00b", "holds a control character (NUL, newline, ...)"),
])
def test_path_problems(path: str, problem: str | None) -> None:
    assert path_problem(path) == problem
    # What is refused here, the gateway refuses as a job path too.
    if problem is not None:
        with pytest.raises(ValueError):
            check_job_path(path, glob=True)


def test_patterns() -> None:
    assert [is_pattern(p) for p in ("a", "*.x", "r?", "[ab]", "a.b")] == [
        False, True, True, True, False]
