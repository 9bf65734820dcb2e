"""Output globs matched against the paths a job left: pure, shell-like.

A pattern is split on '/'; each name is matched with `fnmatch` ('*', '?', '[...]');
'**' matches any number of names (zero included), so 'out/**' is everything in out/.
As in a shell, a name starting with '.' is matched only by a pattern name that starts
with '.' too, so '*' never collects hidden files such as the gateway's control
directory or partial transfers.

Shared by the gateway's output collection and the workflows package's data edges, so a
workflow's `from: STEP:outputs/PATH` matches exactly what the step's globs collect.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from functools import lru_cache


def matches(pattern: str, path: str) -> bool:
    """True when relative `path` matches `pattern`."""
    return _match(tuple(pattern.split("/")), tuple(path.split("/")))


def select(patterns: Sequence[str], paths: Iterable[str]) -> list[str]:
    """The paths any pattern matches, sorted, each once."""
    return sorted(p for p in set(paths) if any(matches(g, p) for g in patterns))


# Memoised: a "**" tries every split, which without it is exponential in the names. Bounded,
# since the patterns and paths come from users.
@lru_cache(maxsize=65_536)
def _match(pattern: tuple[str, ...], names: tuple[str, ...]) -> bool:
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        # Zero names, or one more (never a hidden one) and try again.
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
