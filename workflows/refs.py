"""Data edges: an input's `from:` names a producer step, which instances, and a path.

    mesh:outputs/grid.msh                a step without a matrix
    solve[n=4,mesh=fine]:outputs/r.json  one instance of a step with a matrix (every name)
    solve[n=${{ matrix.n }},mesh=fine]:outputs/r.json
                                         the instance matching this instance's own value
    solve[*]:outputs/r.json              every instance of it (a gather)

A selector value is text up to the next ',' or ']' and may hold placeholders; it is
compared with the producer's values as text (`matrix.value_text`). The text after
`:outputs/` is a path relative to the producer's job directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from rules.text import TextRule
from workflows.matrix import MATRIX_KEY
from workflows.model import STEP_NAME

ALL = "*"
DATA_REF = TextRule(
    "step output reference",
    rf"(?P<step>{STEP_NAME.pattern})(?:\[(?P<selector>[^\]]*)\])?:outputs/(?P<path>.+)",
    "write STEP:outputs/PATH; for a step with a matrix, STEP[NAME=VALUE,...]:outputs/PATH "
    "for one instance or STEP[*]:outputs/PATH for all of them")


@dataclass(frozen=True)
class DataRef:
    """A parsed `from:`. `selector`: None (no matrix), ALL (a str), or (name, value
    template) pairs naming one instance."""

    step: str
    selector: str | tuple[tuple[str, str], ...] | None
    path: str


def parse_ref(text: str) -> DataRef:
    """The data edge `text` names, or ValueError saying what to write."""
    match = DATA_REF.fullmatch(text)
    if match is None:
        raise ValueError(DATA_REF.problem(text))
    selector_text = match["selector"]
    selector: str | tuple[tuple[str, str], ...] | None
    if selector_text is None:
        selector = None
    elif selector_text == ALL:
        selector = ALL
    else:
        pairs: list[tuple[str, str]] = []
        for part in selector_text.split(","):
            name, eq, value = part.partition("=")
            if not eq or not value:
                raise ValueError(f"{part!r} in {text!r} is not NAME=VALUE: name one instance "
                                 f"as {match['step']}[NAME=VALUE,...] or all as "
                                 f"{match['step']}[*]")
            MATRIX_KEY.check(name)
            if name in dict(pairs):
                raise ValueError(f"{text!r} gives {name} twice")
            pairs.append((name, value))
        selector = tuple(pairs)
    return DataRef(step=match["step"], selector=selector, path=match["path"])
