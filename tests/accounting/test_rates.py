"""Costs and SU arithmetic (pure): integer milli-SU, rounded up, minimums and weights."""

from __future__ import annotations

import pytest

from gateway.accounting.rates import Rate, Usage, cost
from gateway.accounting.units import milli, su


@pytest.mark.parametrize(("rate", "usage", "expected"), [
    # The README's worked example: 8 cores at galaxy (0.8 SU per core-hour).
    (Rate(800), Usage(7200, 8), 12_800),
    (Rate(800), Usage(4520, 8), 8036),  # 8.0355... rounded up
    (Rate(1000), Usage(1, 1), 1),  # a second of one core: 0.000277 SU, rounded up
    (Rate(1000), Usage(0, 64), 0),  # never ran
    (Rate(1000, minimum_milli=500), Usage(60, 1), 500),  # the minimum for a run that ran
    (Rate(1000, minimum_milli=500), Usage(0, 1), 0),  # ... but not for one that did not
    (Rate(1000, node_hour_milli=2000), Usage(3600, 4, nodes=2), 8000),
    (Rate(1000, gpu_hour_milli=10_000), Usage(1800, 1, gpus=2), 10_500),
    (Rate(1000, gb_hour_milli=100), Usage(3600, 1, memory_mb=2048), 1200),
])
def test_cost(rate: Rate, usage: Usage, expected: int) -> None:
    assert cost(rate, usage) == expected


def test_rates_are_never_negative() -> None:
    with pytest.raises(ValueError, match="never negative"):
        Rate(-1)


@pytest.mark.parametrize(("text", "amount"), [
    ("1", 1000), ("0.8", 800), ("12.3456", 12_346), ("0.0005", 0), ("0.0015", 2)])
def test_milli(text: str, amount: int) -> None:
    assert milli(text) == amount


@pytest.mark.parametrize(("amount", "text"), [
    (12_800, "12.800"), (-1500, "-1.500"), (0, "0.000"), (1_234_567, "1,234.567")])
def test_su(amount: int, text: str) -> None:
    assert su(amount) == text
