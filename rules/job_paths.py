"""The one rule for a path a user gives relative to a job directory. Pure.

A job's inputs and outputs (gateway.domain.staging.check_job_path), a workflow's paths and
globs (workflows.paths) and a bind's source (containers.binds) are all such paths. The
rule is: not empty, no NUL or other control character (a newline would end a batch-script
line), not absolute, no leading `~` (a shell, scp and sftp read it as a home directory), and
name by name no `..` and no empty or `.` name (no '//', './' or trailing '/'). Callers may
add limits (`max_chars`, `max_name`) and rules of their own; each words its own messages
from the `PathFault` it gets, checked in the order the members are listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum


class PathFault(StrEnum):
    """The first thing wrong with a relative path."""

    EMPTY = "empty"
    CONTROL = "control character"
    TOO_LONG = "too long"
    ABSOLUTE = "absolute"
    HOME = "leading ~"
    PARENT = "'..' name"
    EMPTY_NAME = "empty or '.' name"
    NAME_TOO_LONG = "name too long"


def has_control(value: str) -> bool:
    """True when `value` holds NUL or another ASCII control character (DEL included)."""
    return any(ord(c) < 32 or ord(c) == 127 for c in value)


def name_fault(names: Sequence[str], max_name: int | None = None) -> PathFault | None:
    """The first bad name of a path split on '/': `..`, empty or `.`, longer than
    `max_name` (when given); None when all are plain names."""
    for name in names:
        if name == "..":
            return PathFault.PARENT
        if name in ("", "."):
            return PathFault.EMPTY_NAME
        if max_name is not None and len(name) > max_name:
            return PathFault.NAME_TOO_LONG
    return None


def relative_path_fault(value: str, *, max_chars: int | None = None,
                        max_name: int | None = None,
                        home_ok: bool = False) -> PathFault | None:
    """What is wrong with `value` as a path relative to a job directory, or None.
    `home_ok` lets a leading `~` pass (a path accepted before it was refused)."""
    if not value:
        return PathFault.EMPTY
    if has_control(value):
        return PathFault.CONTROL
    if max_chars is not None and len(value) > max_chars:
        return PathFault.TOO_LONG
    if value.startswith("/"):
        return PathFault.ABSOLUTE
    if value.startswith("~") and not home_ok:
        return PathFault.HOME
    return name_fault(value.split("/"), max_name)
