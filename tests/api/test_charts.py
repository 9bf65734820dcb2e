"""The dashboard's chart geometry, table-driven: bars, frames and burn-down steps."""

from __future__ import annotations

import pytest

from gateway.api import charts


@pytest.mark.parametrize(("values", "widths"), [
    ([("a", 10.0), ("b", 5.0)], [200.0, 100.0]),
    ([("a", 0.0), ("b", 0.0)], [0.0, 0.0]),          # nothing used: empty bars
    ([("a", -3.0), ("b", 4.0)], [0.0, 200.0]),       # a net refund draws no bar
    ([], []),
])
def test_bars_scale_to_the_largest(values: list[tuple[str, float]],
                                   widths: list[float]) -> None:
    found = charts.bars(values, 200.0, 20.0)
    assert [b.width for b in found] == widths
    assert [b.y for b in found] == [20.0 * i for i in range(len(values))]


@pytest.mark.parametrize(("x", "y", "pixels"), [
    (0, 0, (0.0, 100.0)), (10, 50, (200.0, 0.0)), (5, 25, (100.0, 50.0)),
    (-1, 80, (0.0, 0.0)), (20, -5, (200.0, 100.0)),  # clamped to the frame
])
def test_frame_points(x: float, y: float, pixels: tuple[float, float]) -> None:
    assert charts.Frame(200, 100, 0, 10, 50).point(x, y) == pixels


def test_polyline_text() -> None:
    assert charts.Frame(200, 100, 0, 10, 50).polyline([(0, 50), (10, 0)]) == "0.0,0.0 200.0,100.0"


@pytest.mark.parametrize(("deltas", "last", "points"), [
    # A grant on day 0, charges on days 3 and 5, drawn to day 7.
    ([(0, 100.0), (3, -10.0), (5, -5.0)], 7, [(0.0, 100.0), (3.0, 90.0), (5.0, 85.0),
                                             (7.0, 85.0)]),
    ([(0, 100.0), (0, -4.0)], 0, [(0.0, 96.0)]),
    ([], 3, [(0.0, 0.0), (3.0, 0.0)]),
    ([(2, 7.0)], 2, [(0.0, 0.0), (2.0, 7.0)]),
])
def test_burn_down_steps(deltas: list[tuple[int, float]], last: int,
                         points: list[tuple[float, float]]) -> None:
    assert charts.steps(0.0, deltas, last) == points
