"""Paths relative to a job directory, and the shell-like globs of a job's `outputs`.

The globs match as the gateway's output collection does (gateway.domain.output_globs,
which this package may not import; tests/workflows/test_paths.py holds the two together):
'*', '?' and '[...]' within one name, '**' for any number of names, and a name starting
with '.' only matched by a pattern name starting with '.'. The path checks are those of the
gateway's job paths that do not depend on a site; the gateway checks a resolved input again
as a job input.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache

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


def matches(pattern: str, path: str) -> bool:
    """True when the relative `path` matches the output glob `pattern`."""
    return _match(tuple(pattern.split("/")), tuple(path.split("/")))


# Memoised: a "**" tries every split, which without it is exponential in the names. Bounded,
# since the patterns and paths come from users.
@lru_cache(maxsize=65_536)
def _match(pattern: tuple[str, ...], names: tuple[str, ...]) -> bool:
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        if _match(rest, names):
            return True
        return bool(names) and not names[0].startswith(".") and _match(pattern, names[1:])
    if not names:
        return False
    return _name_matches(head, names[0]) and _match(rest, names[1:])


def _name_matches(pattern: str, name: str) -> bool:
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatchcase(name, pattern)
