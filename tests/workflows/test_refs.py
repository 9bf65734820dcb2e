"""`from:` references: producer step, which instances, and the path below outputs/."""

from __future__ import annotations

import pytest

from workflows.refs import ALL, DataRef, parse_ref


@pytest.mark.parametrize(("text", "expected"), [
    ("mesh:outputs/grid.msh", DataRef("mesh", None, "grid.msh")),
    ("mesh:outputs/out/*.msh", DataRef("mesh", None, "out/*.msh")),
    ("solve[*]:outputs/r.json", DataRef("solve", ALL, "r.json")),
    ("solve[n=4,mesh=fine]:outputs/r.json",
     DataRef("solve", (("n", "4"), ("mesh", "fine")), "r.json")),
    ("solve[n=${{ matrix.n }}]:outputs/r-${{ matrix.n }}.json",
     DataRef("solve", (("n", "${{ matrix.n }}"),), "r-${{ matrix.n }}.json")),
    # A path may hold ':' and "outputs/" again: only the first ":outputs/" separates.
    ("a:outputs/b:outputs/c", DataRef("a", None, "b:outputs/c")),
])
def test_references(text: str, expected: DataRef) -> None:
    assert parse_ref(text) == expected


HINT = ("write STEP:outputs/PATH; for a step with a matrix, STEP[NAME=VALUE,...]:outputs/PATH "
        "for one instance or STEP[*]:outputs/PATH for all of them")


@pytest.mark.parametrize(("text", "message"), [
    ("mesh/grid.msh", f"'mesh/grid.msh' is not a valid step output reference: {HINT}"),
    ("mesh:grid.msh", f"'mesh:grid.msh' is not a valid step output reference: {HINT}"),
    ("mesh:outputs/", f"'mesh:outputs/' is not a valid step output reference: {HINT}"),
    ("1mesh:outputs/x", f"'1mesh:outputs/x' is not a valid step output reference: {HINT}"),
    ("mesh:outputs/x\n", f"'mesh:outputs/x\\n' is not a valid step output reference: {HINT}"),
    ("s[n]:outputs/x", "'n' in 's[n]:outputs/x' is not NAME=VALUE: name one instance as "
                       "s[NAME=VALUE,...] or all as s[*]"),
    ("s[n=]:outputs/x", "'n=' in 's[n=]:outputs/x' is not NAME=VALUE: name one instance as "
                        "s[NAME=VALUE,...] or all as s[*]"),
    ("s[]:outputs/x", "'' in 's[]:outputs/x' is not NAME=VALUE: name one instance as "
                      "s[NAME=VALUE,...] or all as s[*]"),
    ("s[n=1,n=2]:outputs/x", "'s[n=1,n=2]:outputs/x' gives n twice"),
    ("s[1n=1]:outputs/x", "'1n' is not a valid matrix name: use 1-32 letters, digits or '_', "
                          "not starting with a digit"),
])
def test_refused_references(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_ref(text)
    assert str(caught.value) == message
