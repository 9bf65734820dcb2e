"""Paths relative to a job directory, and output globs matched as the gateway collects them
(gateway.domain.output_globs, which workflows/ may not import: compared here)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.domain import output_globs
from gateway.domain.staging import check_job_path
from workflows.paths import is_pattern, matches, path_problem

GLOBS = ["*.json", "out/*", "out/**", "**/*.h5", "**", "r?.txt", "[ab].dat", ".hidden",
         "out/**/x.csv", "*"]
PATHS = ["a.json", "out/a", "out/b/c", "x/y/z.h5", "z.h5", "r1.txt", "r10.txt", "a.dat",
         "c.dat", ".hidden", ".git/x", "out/.x", "out/x.csv", "out/q/x.csv", "out/q/.p/x.csv"]


@pytest.mark.parametrize("pattern", GLOBS)
def test_globs_match_as_the_gateway_collects_outputs(pattern: str) -> None:
    for path in PATHS:
        assert matches(pattern, path) == output_globs.matches(pattern, path), (pattern, path)


NAME = st.sampled_from(["a", "b", ".h", "x.json", "*", "?", "**", "*.json", "[ab]"])


@given(st.lists(NAME, min_size=1, max_size=4), st.lists(NAME, min_size=1, max_size=4))
def test_globs_agree_with_the_gateway_on_any_names(pattern: list[str], path: list[str]) -> None:
    assert matches("/".join(pattern), "/".join(path)) == output_globs.matches(
        "/".join(pattern), "/".join(path))


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
