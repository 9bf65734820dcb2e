"""Staging time estimates: golden values computed by hand."""

from __future__ import annotations

import pytest

from gateway.scheduling.prediction.staging_estimate import (
    TransferRates,
    origin_of,
    staging_seconds,
)

INPUTS = {"upload:7b1f": 200_000_000, "site://b/scratch/in.dat": 100_000_000,
          "https://example.org/x": 0}


def test_origins_of_spec_sources() -> None:
    assert origin_of("upload:7b1f") == "upload"
    assert origin_of("site://galaxy/home/u/in") == "galaxy"
    assert origin_of("https://example.org/x") == "https"


def test_bytes_over_default_rates() -> None:
    rates = TransferRates(defaults={"a": 100e6, "b": 50e6})
    # At a: the upload at 100 MB/s (a's rate) = 2 s; b -> a at the slower 50 MB/s = 2 s.
    assert staging_seconds("a", INPUTS, rates) == pytest.approx(4.0)
    # At b: its own file is already there; the upload at 50 MB/s = 4 s.
    assert staging_seconds("b", INPUTS, rates) == pytest.approx(4.0)
    # A site with no configured rate: the 10 MB/s fallback (20 s + 10 s).
    assert staging_seconds("c", INPUTS, TransferRates()) == pytest.approx(30.0)


def test_cached_inputs_cost_nothing() -> None:
    rates = TransferRates(defaults={"a": 100e6, "b": 50e6})
    assert staging_seconds("a", INPUTS, rates, cached={"upload:7b1f"}) == pytest.approx(2.0)


def test_outputs_come_back_to_the_gateway() -> None:
    rates = TransferRates(defaults={"a": 100e6})
    assert staging_seconds("a", {}, rates, output_bytes=300_000_000) == pytest.approx(3.0)


def test_measured_rate_is_an_ewma_of_transfers() -> None:
    rates = TransferRates(defaults={"a": 100e6})
    rates.observe("upload", "a", 1_000_000_000, 50.0)  # 20 MB/s: the first sets the rate
    assert rates.rate("upload", "a") == pytest.approx(20e6)
    rates.observe("upload", "a", 1_000_000_000, 10.0)  # 100 MB/s: a quarter of the way
    assert rates.rate("upload", "a") == pytest.approx(40e6)
    rates.observe("upload", "a", 0, 1.0)  # nothing measurable: unchanged
    assert rates.rate("upload", "a") == pytest.approx(40e6)
    assert rates.rate("a", "upload") == pytest.approx(100e6)  # the reverse path is its own
    assert staging_seconds("a", {"upload:x": 80_000_000}, rates) == pytest.approx(2.0)
