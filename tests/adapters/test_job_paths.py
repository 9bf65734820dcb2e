"""The job-path rule (rules.job_paths): the first fault, in the rule's order."""

from __future__ import annotations

import pytest

from rules.job_paths import PathFault, name_fault, relative_path_fault


@pytest.mark.parametrize(("path", "fault"), [
    ("a/b.txt", None),
    ("out/*.json", None),
    ("", PathFault.EMPTY),
    ("a\nb", PathFault.CONTROL),
    ("a\x7fb", PathFault.CONTROL),
    ("/etc/passwd", PathFault.ABSOLUTE),
    ("/a\x00", PathFault.CONTROL),
    ("~/.ssh/id", PathFault.HOME),
    ("a/../b", PathFault.PARENT),
    ("a//b", PathFault.EMPTY_NAME),
    ("./a", PathFault.EMPTY_NAME),
    ("a/", PathFault.EMPTY_NAME),
    ("a//..", PathFault.EMPTY_NAME),  # name by name: the first bad one
])
def test_relative_path_faults(path: str, fault: PathFault | None) -> None:
    assert relative_path_fault(path) == fault


def test_limits_and_home() -> None:
    assert relative_path_fault("a" * 11, max_chars=10) is PathFault.TOO_LONG
    assert relative_path_fault("/" + "a" * 10, max_chars=10) is PathFault.TOO_LONG
    assert relative_path_fault("abc/defg", max_name=3) is PathFault.NAME_TOO_LONG
    assert relative_path_fault("abcd/..", max_name=3) is PathFault.NAME_TOO_LONG
    assert relative_path_fault("~a/b", home_ok=True) is None
    assert name_fault(["a", "b"]) is None and name_fault(["..", ""]) is PathFault.PARENT
