"""Paths relative to a job directory, and the shell-like globs of a job's `outputs`.

The globs are matched by `adapters.output_globs`, the matcher of the gateway's own output
collection. The path checks are those of the gateway's job paths that do not depend on a
site; the gateway checks a resolved input again as a job input.
"""

from __future__ import annotations

from adapters.output_globs import matches

__all__ = ["is_pattern", "matches", "path_problem"]

_PATTERN_CHARS = frozenset("*?[")


def is_pattern(path: str) -> bool:
    """True when `path` holds glob characters ('*', '?', '[')."""
    return not _PATTERN_CHARS.isdisjoint(path)


def path_problem(path: str) -> str | None:
    """Why `path` is not a path (or glob) relative to the job directory, or None."""
    if not path:
        return "is empty: give a path relative to the job directory"
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "holds a control character (NUL, newline, ...)"
    if path.startswith("/"):
        return "is absolute: give a path relative to the job directory"
    if path.startswith("~"):
        # A shell, scp and sftp read a leading ~ as a home directory.
        return "starts with '~' (a home directory): give a path relative to the job directory"
    for name in path.split("/"):
        if name == "..":
            return "has a '..' name: it would leave the job directory"
        if name in ("", "."):
            return "has an empty or '.' name (no '//', './' or trailing '/')"
    return None
