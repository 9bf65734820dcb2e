"""The arithmetic of committee reports, table-driven: burn rate, exhaustion, job size
buckets, nearest-rank positions and the expansion factor."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from gateway.accounting import report_math as rm

T = datetime(2026, 11, 25, tzinfo=UTC)
END = T + timedelta(days=100)


@pytest.mark.parametrize(("cores", "label"), [
    (0, "0"), (1, "1"), (2, "2-4"), (4, "2-4"), (5, "5-16"), (16, "5-16"), (17, "17-64"),
    (64, "17-64"), (65, "65-256"), (256, "65-256"), (257, "257+"), (100_000, "257+"),
])
def test_size_buckets(cores: int, label: str) -> None:
    assert rm.size_label(cores) == label


def test_size_buckets_cover_every_core_count_once() -> None:
    edges = [(low, high) for _, low, high in rm.SIZE_BUCKETS]
    for (_, high), (low, _) in itertools.pairwise(edges):
        assert high is not None and low == high + 1
    assert edges[0][0] == 1 and edges[-1][1] is None


@pytest.mark.parametrize(("used", "days", "per_day"), [
    (30_000, 30, 1000),       # 30 SU over 30 days: 1 SU a day
    (10_000, 7, 1428),        # rounded down to the milli-SU
    (0, 30, 0),
    (-500, 30, 0),            # refunds outweighing charges burn nothing
    (5000, 0, 0),             # an empty window
])
def test_burn_rate(used: int, days: int, per_day: int) -> None:
    assert rm.burn_per_day_milli(used, timedelta(days=days)) == per_day


@pytest.mark.parametrize(("remaining", "burn", "at", "before_end"), [
    (10_000, 1000, T + timedelta(days=10), True),     # 10 SU at 1 SU/day: 10 days
    (200_000, 1000, T + timedelta(days=200), False),  # lasts past the allocation's end
    (1500, 1000, T + timedelta(days=1.5), True),
    (10_000, 0, None, False),                         # nothing burned: never
    (0, 1000, T, True),                               # already exhausted
    (-2000, 0, T, True),                              # overdrawn (credit): exhausted now
    (10**15, 1, None, False),                         # beyond any date
])
def test_exhaustion(remaining: int, burn: int, at: datetime | None, before_end: bool) -> None:
    assert rm.exhaustion(remaining, burn, T, END) == rm.Exhaustion(at, before_end)


@pytest.mark.parametrize(("count", "q", "offset"), [
    (0, 0.5, None), (1, 0.5, 0), (1, 0.9, 0), (2, 0.5, 0), (4, 0.5, 1), (5, 0.5, 2),
    (10, 0.9, 8), (11, 0.9, 9), (100, 0.9, 89), (3, 1.0, 2),
])
def test_nearest_rank(count: int, q: float, offset: int | None) -> None:
    assert rm.rank_offset(count, q) == offset


@pytest.mark.parametrize("q", [0.0, -0.1, 1.1])
def test_a_quantile_outside_0_1_is_refused(q: float) -> None:
    with pytest.raises(ValueError, match="quantile"):
        rm.rank_offset(10, q)


@pytest.mark.parametrize(("wait", "run", "factor"), [
    (0, 100, 1.0), (100, 100, 2.0), (300, 100, 4.0), (-5, 100, 1.0), (10, 0, None),
])
def test_expansion_factor(wait: float, run: float, factor: float | None) -> None:
    assert rm.expansion_factor(wait, run) == factor


@pytest.mark.parametrize(("seconds", "hours"), [(3600, 1.0), (5400, 1.5), (1, 0.0), (0, 0.0)])
def test_core_hours(seconds: int, hours: float) -> None:
    assert rm.core_hours(seconds) == hours
