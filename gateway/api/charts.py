"""Geometry of the dashboard's inline SVG charts, pure: bars for a breakdown, a polyline
for a burn-down. The template draws what these compute (no script, no CDN)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    """One horizontal bar: its label, value and width in pixels."""

    label: str
    value: float
    y: float
    width: float


def bars(values: Sequence[tuple[str, float]], width: float, row: float) -> list[Bar]:
    """Bars scaled so the largest value fills `width`; rows `row` pixels apart."""
    top = max((v for _, v in values), default=0.0)
    scale = width / top if top > 0 else 0.0
    return [Bar(label, value, i * row, max(value, 0.0) * scale)
            for i, (label, value) in enumerate(values)]


@dataclass(frozen=True)
class Frame:
    """A plot area of `width` x `height` pixels over x in [x0, x1] and y in [0, y1]."""

    width: float
    height: float
    x0: float
    x1: float
    y1: float

    def point(self, x: float, y: float) -> tuple[float, float]:
        """Pixels for (x, y): y grows upwards, values outside are clamped to the frame."""
        span = (self.x1 - self.x0) or 1.0
        px = min(max((x - self.x0) / span, 0.0), 1.0) * self.width
        py = (1.0 - min(max(y / self.y1, 0.0), 1.0)) * self.height if self.y1 > 0 else self.height
        return round(px, 1), round(py, 1)

    def polyline(self, points: Sequence[tuple[float, float]]) -> str:
        """An SVG `points` attribute."""
        return " ".join(f"{px},{py}" for px, py in (self.point(x, y) for x, y in points))


def steps(start: float, deltas: Sequence[tuple[int, float]], last_day: int
          ) -> list[tuple[float, float]]:
    """A running balance as (day, value) points: `start` with day 0's changes (a grant
    starts the line at its award), then each later day's change, held flat until
    `last_day`."""
    value = start + sum(delta for day, delta in deltas if day <= 0)
    points = [(0.0, value)]
    for day, delta in sorted(d for d in deltas if d[0] > 0):
        value += delta
        points.append((float(day), value))
    if points[-1][0] < last_day:
        points.append((float(last_day), value))
    return points
