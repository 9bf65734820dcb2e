"""The "Layout" map of the docs (docs/design/layout.md) names every package of the tree,
and nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("gateway", "adapters", "containers", "workflows", "rules")
# Folders of data, not rooms of code.
NOT_ROOMS = {"gateway/db/migrations", "gateway/db/migrations/versions"}


def _map() -> list[str]:
    section = (ROOT / "docs" / "design" / "layout.md").read_text()
    block = re.search(r"^```\n(.*?)^```", section, re.DOTALL | re.MULTILINE)
    assert block is not None, "the Layout section starts with a fenced map"
    return block.group(1).splitlines()


def _named_paths() -> set[str]:
    """Each line: the rooms it names first (`name/` or `file.py`, several allowed), then
    what they hold; two spaces of indent put a line inside the line above it."""
    named: set[str] = set()
    parents: list[str] = []
    for line in _map():
        words = line.split()
        if not words or not re.fullmatch(r"[\w.-]+(/|\.py)", words[0]):
            continue  # a continuation of the line above
        depth = (len(line) - len(line.lstrip(" "))) // 2
        parents = parents[:depth]
        here = _leading_names(words)
        for word in here:
            named.add("/".join([*parents, word.rstrip("/")]))
        parents.append(here[0].rstrip("/"))
    return named


def _leading_names(words: list[str]) -> list[str]:
    names = []
    for word in words:
        if not re.fullmatch(r"[\w.-]+(/|\.py)", word):
            break
        names.append(word)
    return names


def test_every_package_is_on_the_map() -> None:
    named = _named_paths()
    packages = {str(init.parent.relative_to(ROOT)) for top in PACKAGES
                for init in (ROOT / top).rglob("__init__.py")} - NOT_ROOMS
    assert sorted(packages - named) == []


def test_everything_on_the_map_exists() -> None:
    assert sorted(p for p in _named_paths() if not (ROOT / p).exists()) == []
