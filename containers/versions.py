"""Release numbers of runtimes and MPI libraries, compared as numbers ("3.10" > "3.9")."""

from __future__ import annotations

from dataclasses import dataclass, field

from containers.errors import InvalidDeclaration
from rules.text import TextRule

# Up to four numeric parts: 0.31, 1.2.5, 2021.10.0, 4.1.4. Distribution suffixes
# (`-1.el8`, `+dfsg`) are left to whoever writes the declaration: they do not order.
VERSION = TextRule(
    "version", r"[0-9]{1,9}(?:\.[0-9]{1,9}){0,3}",
    "write numbers separated by dots, e.g. 1.2.5, 0.31 or 2021.10 (no suffix such as -1.el8)")


@dataclass(frozen=True, order=True)
class Version:
    """A release number, shown as written and compared as numbers with missing parts
    counting as 0 (`4` == `4.0.0` < `4.0.1`)."""

    parts: tuple[int, ...] = field(compare=False)
    # What equality, ordering and hashing use: the parts without trailing zeros.
    key: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        parts = tuple(self.parts)
        if not parts or any(p < 0 for p in parts):
            raise InvalidDeclaration(f"a version needs non-negative parts, not {self.parts!r}")
        key = parts
        while len(key) > 1 and key[-1] == 0:
            key = key[:-1]
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "key", key)

    @classmethod
    def parse(cls, text: str) -> Version:
        """`text` such as "1.2.5" as a Version; InvalidDeclaration otherwise."""
        problem = VERSION.problem(text)
        if problem is not None:
            raise InvalidDeclaration(problem)
        return cls(tuple(int(p) for p in text.split(".")))

    @property
    def major(self) -> int:
        return self.parts[0]

    @property
    def minor(self) -> int:
        return self.parts[1] if len(self.parts) > 1 else 0

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.parts)


def version(text: str) -> Version:
    """Shorthand for `Version.parse` (tables of declarations read better with it)."""
    return Version.parse(text)
