"""Matrix sweeps: the cartesian product in the order written, values as text, and
`${{ matrix.NAME }}` substituted in one pass, as data."""

from __future__ import annotations

import pytest

from workflows.matrix import (
    expand,
    matrix_size,
    placeholder_problem,
    substitute,
    value_text,
)


def test_expand_is_the_cartesian_product_first_name_slowest() -> None:
    assert expand({"n": [1, 2], "mesh": ["coarse", "fine"], "lr": [0.5]}) == [
        (("n", "1"), ("mesh", "coarse"), ("lr", "0.5")),
        (("n", "1"), ("mesh", "fine"), ("lr", "0.5")),
        (("n", "2"), ("mesh", "coarse"), ("lr", "0.5")),
        (("n", "2"), ("mesh", "fine"), ("lr", "0.5")),
    ]
    assert expand({}) == [()]
    assert matrix_size({"a": [1, 2, 3], "b": ["x", "y"]}) == 6
    assert matrix_size({}) == 1


@pytest.mark.parametrize(("value", "text"), [
    ("coarse", "coarse"), ("", ""), ("--flag=a b", "--flag=a b"), (7, "7"), (-3, "-3"),
    (0.01, "0.01"), (1e-05, "1e-05"), (2.0, "2.0"), (10**20, "100000000000000000000"),
])
def test_values_as_text(value: str | int | float, text: str) -> None:
    assert value_text(value) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("solve-${{ matrix.n }}", "solve-4"),
    ("${{matrix.n}}x${{ matrix.mesh }}", "4xfine"),
    ("${{\tmatrix.n\t}}", "4"),
    ("no placeholder", "no placeholder"),
    # Shell syntax is not ours: left as it is.
    ("${n} $n {n} $((n))", "${n} $n {n} $((n))"),
])
def test_substitute(text: str, expected: str) -> None:
    assert substitute(text, {"n": "4", "mesh": "fine"}) == expected


def test_a_substituted_value_is_data_never_read_again() -> None:
    values = {"a": "${{ matrix.b }}", "b": "$(rm -rf ~); `id`"}
    assert substitute("${{ matrix.a }}|${{ matrix.b }}", values) == (
        "${{ matrix.b }}|$(rm -rf ~); `id`")


@pytest.mark.parametrize(("text", "names", "problem"), [
    ("${{ matrix.n }}", ["n"], None),
    ("a ${{ matrix.n }} b ${{ matrix.m }}", ["n", "m"], None),
    ("${{ matrix.x }}", ["n", "m"], "uses matrix.x, but step s's matrix has n, m"),
    ("${{ matrix.n }}", [], "uses matrix.n, but step s has no matrix"),
    ("${{ matrix x }}", ["x"], "'${{ matrix x }}' is not a placeholder: write "
                               "${{ matrix.NAME }} with NAME a name of the step's matrix"),
    ("${{ env.HOME }}", ["x"], "'${{ env.HOME }}' is not a placeholder: write "
                               "${{ matrix.NAME }} with NAME a name of the step's matrix"),
    ("ok ${{ matrix.n }} then ${{", ["n"], "'${{' is not a placeholder: write "
                                           "${{ matrix.NAME }} with NAME a name of the step's "
                                           "matrix"),
    ("${{ matrix.n\n}}", ["n"], "'${{ matrix.n\\n}}' is not a placeholder: write "
                                "${{ matrix.NAME }} with NAME a name of the step's matrix"),
])
def test_placeholder_problems(text: str, names: list[str], problem: str | None) -> None:
    assert placeholder_problem(text, names, "s") == problem
