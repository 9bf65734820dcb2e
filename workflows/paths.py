"""Paths relative to a job directory, and the shell-like globs of a job's `outputs`.

The globs are matched by `rules.output_globs`, the matcher of the gateway's own output
collection. The path check is the job-path rule of `rules.job_paths` without the
gateway's length limits and control directory; the gateway checks a resolved input again
as a job input (gateway.domain.staging.check_job_path).
"""

from __future__ import annotations

from rules.job_paths import PathFault, relative_path_fault
from rules.output_globs import matches

__all__ = ["is_pattern", "matches", "path_problem"]

_PATTERN_CHARS = frozenset("*?[")
_PROBLEMS = {
    PathFault.EMPTY: "is empty: give a path relative to the job directory",
    PathFault.CONTROL: "holds a control character (NUL, newline, ...)",
    PathFault.ABSOLUTE: "is absolute: give a path relative to the job directory",
    # A shell, scp and sftp read a leading ~ as a home directory.
    PathFault.HOME: "starts with '~' (a home directory): give a path relative to the job "
                    "directory",
    PathFault.PARENT: "has a '..' name: it would leave the job directory",
    PathFault.EMPTY_NAME: "has an empty or '.' name (no '//', './' or trailing '/')",
}


def is_pattern(path: str) -> bool:
    """True when `path` holds glob characters ('*', '?', '[')."""
    return not _PATTERN_CHARS.isdisjoint(path)


def path_problem(path: str) -> str | None:
    """Why `path` is not a path (or glob) relative to the job directory, or None."""
    fault = relative_path_fault(path)
    return None if fault is None else _PROBLEMS[fault]
