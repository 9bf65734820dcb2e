"""Matrix parameter sweeps: named lists, their cartesian product, and `${{ matrix.NAME }}`.

A step's `matrix: {n: [1, 2, 4], mesh: [coarse, fine]}` makes one instance per combination,
in the order written (n=1 mesh=coarse, n=1 mesh=fine, n=2 mesh=coarse, ...). In the places a
placeholder may stand (see `validate`), `${{ matrix.n }}` is replaced by the instance's value
as text: a string as it is, an integer in decimal, a float as Python's shortest round trip
(0.01, 1e-05). Substitution is one pass over the text, as data: a value is never read again
for placeholders, and nothing reaches a shell. The syntax is GitHub Actions', chosen because
shell text never contains `${{` by accident, while `{x}` and `${x}` appear in real arguments.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BeforeValidator, StrictFloat, StrictInt, StrictStr

from rules.text import TextRule

MATRIX_KEY = TextRule(
    "matrix name", r"[A-Za-z_][A-Za-z0-9_]{0,31}",
    "use 1-32 letters, digits or '_', not starting with a digit")
OPEN = "${{"
# Searched for (not matched whole): it finds placeholders inside longer text.
PLACEHOLDER = re.compile(r"\$\{\{[ \t]*matrix\.(" + MATRIX_KEY.pattern + r")[ \t]*\}\}")

Values = tuple[tuple[str, str], ...]
"""One instance's matrix values as text, in the matrix's order: (("n", "1"), ("mesh", "fine"))."""


def _scalar(value: Any) -> Any:
    # Before pydantic's own checks, to say why: YAML turns yes/no/on/off into booleans.
    if isinstance(value, bool):
        raise ValueError("true/false is not a matrix value: quote it ('true') for the text "
                         "(YAML also reads yes, no, on and off as true/false)")
    if not isinstance(value, str | int | float):
        raise ValueError(f"a matrix value is a string or a number, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a matrix value must be a finite number or a string")
    return value


MatrixValue = Annotated[StrictStr | StrictInt | StrictFloat, BeforeValidator(_scalar)]


def value_text(value: str | int | float) -> str:
    """A matrix value as substituted: strings as written, numbers in their shortest form."""
    return value if isinstance(value, str) else repr(value)


def matrix_size(matrix: Mapping[str, Sequence[object]]) -> int:
    """How many instances `matrix` expands to (1 for no matrix)."""
    return math.prod(len(values) for values in matrix.values())


def expand(matrix: Mapping[str, Sequence[str | int | float]]) -> list[Values]:
    """Every combination of `matrix`'s values, first name slowest; [()] for no matrix."""
    names = list(matrix)
    texts = [[value_text(v) for v in matrix[name]] for name in names]
    return [tuple(zip(names, combo, strict=True)) for combo in itertools.product(*texts)]


def placeholder_problem(text: str, names: Collection[str], step: str) -> str | None:
    """Why the placeholders in `text` cannot be filled from `step`'s matrix `names`, or None."""
    at = text.find(OPEN)
    while at != -1:
        match = PLACEHOLDER.match(text, at)
        if match is None:
            shown = text[at:at + 40]
            return (f"{shown!r} is not a placeholder: write ${{{{ matrix.NAME }}}} with NAME "
                    "a name of the step's matrix")
        if match[1] not in names:
            if not names:
                return f"uses matrix.{match[1]}, but step {step} has no matrix"
            known = ", ".join(names)
            return f"uses matrix.{match[1]}, but step {step}'s matrix has {known}"
        at = text.find(OPEN, match.end())
    return None


def has_placeholder(text: str) -> bool:
    """True when `text` holds `${{` (a placeholder, or something meant as one)."""
    return OPEN in text


def substitute(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `${{ matrix.NAME }}` replaced by `values[NAME]`, in one pass."""
    return PLACEHOLDER.sub(lambda match: values[match[1]], text)
