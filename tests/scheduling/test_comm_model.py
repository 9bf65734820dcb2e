"""The two-regime communication model recovers the seed paper's parameters.

Data are generated from seed 004 (Table 2: MPI_Send over Myrinet and Ethernet;
Table 3: MPI_Recv over Ethernet) at message sizes from 0 B to 1 MiB.
"""

from __future__ import annotations

import math
import random

import pytest

from gateway.scheduling.evaluation.comm_model import (
    TwoRegimeModel,
    fit_line,
    fit_two_regime,
    latency_us,
    peak_bandwidth_mbs,
    pingpong_row,
)

K = 1024
# Powers of two plus the 3*2^k midpoints, so each regime has several points even
# when the Ethernet threshold (256K) leaves few sizes above it.
SIZES = sorted({0} | {2**i for i in range(21)} | {3 * 2**i for i in range(19)})
assert SIZES[0] == 0 and SIZES[-1] == 1024 * K

# name, a0, a1, b0, b1, n_bar (bytes)
SEED_TABLES = [
    ("myrinet-send", 4.02794, 0.00188, 57.43650, 0.00610, 10 * K),
    ("ethernet-send", 16.03866, 0.00578, -21212.75604, 0.07966, 256 * K),
    ("ethernet-recv", 192.69104, 0.20585, 26084.29131, 0.09761, 256 * K),
]


def seed_time(n: int, a0: float, a1: float, b0: float, b1: float, n_bar: int) -> float:
    return a0 + a1 * n if n <= n_bar else b0 + b1 * n


def usable_sizes(a0: float, a1: float, b0: float, b1: float, n_bar: int) -> list[int]:
    # Ethernet's b0 is so negative that the model is below zero just above 256K
    # (up to ~266K); a measurement cannot be, so such sizes are not generated.
    return [n for n in SIZES if seed_time(n, a0, a1, b0, b1, n_bar) > 0]


def assert_params(model: TwoRegimeModel, a0: float, a1: float, b0: float, b1: float,
                  n_bar: int, rel: float) -> None:
    assert model.threshold <= n_bar < model.first_above
    assert model.a0 == pytest.approx(a0, rel=rel)
    assert model.a1 == pytest.approx(a1, rel=rel)
    assert model.b0 == pytest.approx(b0, rel=rel)
    assert model.b1 == pytest.approx(b1, rel=rel)


@pytest.mark.parametrize(("name", "a0", "a1", "b0", "b1", "n_bar"), SEED_TABLES)
def test_recovers_seed_parameters_exactly(
    name: str, a0: float, a1: float, b0: float, b1: float, n_bar: int
) -> None:
    sizes = usable_sizes(a0, a1, b0, b1, n_bar)
    times = [seed_time(n, a0, a1, b0, b1, n_bar) for n in sizes]
    model = fit_two_regime(sizes, times)
    assert_params(model, a0, a1, b0, b1, n_bar, rel=1e-6)
    assert model.rmse < 1e-9
    for n, t in zip(sizes, times, strict=True):
        assert model.predict(n) == pytest.approx(t, rel=1e-6)


@pytest.mark.parametrize(("name", "a0", "a1", "b0", "b1", "n_bar"), SEED_TABLES)
def test_recovers_seed_parameters_with_noise(
    name: str, a0: float, a1: float, b0: float, b1: float, n_bar: int
) -> None:
    """Five repetitions per size with 1% multiplicative noise, like real timings."""
    rng = random.Random(f"{name}-noise")
    sizes: list[int] = []
    times: list[float] = []
    for n in usable_sizes(a0, a1, b0, b1, n_bar):
        for _ in range(5):
            sizes.append(n)
            times.append(seed_time(n, a0, a1, b0, b1, n_bar) * (1 + rng.gauss(0, 0.01)))
    model = fit_two_regime(sizes, times)
    assert model.threshold <= n_bar < model.first_above
    assert model.a0 == pytest.approx(a0, rel=0.05)
    assert model.a1 == pytest.approx(a1, rel=0.05)
    assert model.b1 == pytest.approx(b1, rel=0.05)
    # b0 is a small difference of large numbers for Myrinet; judge it by what it predicts.
    assert model.predict(1024 * K) == pytest.approx(
        seed_time(1024 * K, a0, a1, b0, b1, n_bar), rel=0.02
    )
    assert 0.005 < model.rmse < 0.02


def test_relative_error_keeps_the_eager_regime_accurate() -> None:
    """Small messages' times are fitted to within a few percent, not swamped by 1 MiB ones."""
    a0, a1, b0, b1, n_bar = SEED_TABLES[0][1:]
    rng = random.Random(7)
    sizes = usable_sizes(a0, a1, b0, b1, n_bar)
    times = [seed_time(n, a0, a1, b0, b1, n_bar) * (1 + rng.gauss(0, 0.02)) for n in sizes]
    model = fit_two_regime(sizes, times)
    assert model.predict(0) == pytest.approx(a0, rel=0.05)


def test_threshold_is_a_measured_size_and_splits_predictions() -> None:
    model = TwoRegimeModel(a0=1, a1=0.5, b0=100, b1=2, threshold=8, first_above=16,
                           rmse=0, rmse_us=0, points=0)
    assert model.predict(8) == 5
    assert model.predict(9) == 118
    assert model.asymptotic_bandwidth_mbs == 0.5


def test_myrinet_bandwidth_from_slope() -> None:
    a0, a1, b0, b1, n_bar = SEED_TABLES[0][1:]
    sizes = usable_sizes(a0, a1, b0, b1, n_bar)
    model = fit_two_regime(sizes, [seed_time(n, a0, a1, b0, b1, n_bar) for n in sizes])
    assert model.asymptotic_bandwidth_mbs == pytest.approx(1 / 0.00610, rel=1e-6)


@pytest.mark.parametrize(
    ("sizes", "times", "message"),
    [
        ([0, 1, 2], [1.0, 2.0, 3.0], "at least 4 distinct"),
        ([0, 0, 0, 0, 1, 1], [1.0] * 6, "at least 4 distinct"),
        ([0, 1, 2, 3], [1.0, 2.0, 0.0, 4.0], "positive"),
        ([0, 1, 2, 3], [1.0, 2.0, math.nan, 4.0], "positive"),
        ([0, 1, 2, 3], [1.0, 2.0, 3.0], "same length"),
    ],
)
def test_rejects_unusable_data(sizes: list[int], times: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_two_regime(sizes, times)


def test_min_points_per_side() -> None:
    sizes = [0, 1, 2, 4, 8, 16]
    times = [1.0, 1.5, 2.0, 3.0, 50.0, 90.0]
    model = fit_two_regime(sizes, times, min_points=3)
    assert model.threshold >= 2
    assert len([s for s in sizes if s > model.threshold]) >= 3


def test_fit_line_weights_relative_residuals() -> None:
    line = fit_line([0, 10, 20], [1.0, 2.0, 3.0])
    assert line.intercept == pytest.approx(1.0)
    assert line.slope == pytest.approx(0.1)
    assert line.sse == pytest.approx(0.0, abs=1e-20)
    # Relative residuals: scaling every time by 1000 leaves the error unchanged,
    # so a 10% miss at 1 us weighs as much as a 10% miss at 1 ms.
    small = fit_line([0, 1, 2, 3], [1.1, 2.0, 3.0, 4.0])
    large = fit_line([0, 1, 2, 3], [1100.0, 2000.0, 3000.0, 4000.0])
    assert small.sse > 0
    assert large.sse == pytest.approx(small.sse, rel=1e-9)
    assert large.slope == pytest.approx(1000 * small.slope, rel=1e-9)


@pytest.mark.parametrize(
    ("nbytes", "seconds", "time_us", "mbs"),
    [
        (0, 4.02794e-6, 4.02794, 0.0),
        (1024 * K, 1048576 / 164e6, 1048576 / 164, 164.0),
        (1000, 1e-5, 10.0, 100.0),
    ],
)
def test_pingpong_row(nbytes: int, seconds: float, time_us: float, mbs: float) -> None:
    row = pingpong_row(nbytes, 100, seconds)
    assert row.time_us == pytest.approx(time_us)
    assert row.bandwidth_mbs == pytest.approx(mbs)
    assert row.repetitions == 100


def test_latency_and_peak_bandwidth() -> None:
    rows = [pingpong_row(n, 10, (4.0 + 0.01 * n) * 1e-6) for n in (0, 1024, 65536, 1048576)]
    assert latency_us(rows) == pytest.approx(4.0)
    assert peak_bandwidth_mbs(rows) == pytest.approx(1048576 / (4.0 + 10485.76))
    with pytest.raises(ValueError):
        pingpong_row(8, 1, 0.0)
    with pytest.raises(ValueError):
        latency_us([])


def test_slopes_are_never_negative_by_default() -> None:
    """Noise that makes small messages look slower than slightly larger ones gives a
    flat eager line, not a falling one; the unconstrained fit is still available."""
    sizes = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]
    times = [3.0, 2.9, 2.8, 2.7, 2.6, 10.0, 12.0, 16.0, 24.0, 40.0]
    model = fit_two_regime(sizes, times)
    assert model.threshold == 8
    assert model.a1 == 0.0
    assert model.a0 == pytest.approx(2.8, rel=0.02)
    free = fit_two_regime(sizes, times, nonnegative_slopes=False)
    assert free.a1 < 0
