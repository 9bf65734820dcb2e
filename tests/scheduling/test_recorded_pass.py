"""The routing pass's caches move nothing: every decision and forecast of a small
federation's pass equals the one recorded before them (`recorded_pass.py`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.scheduling.recorded_pass import JOBS, as_data, run

RECORDED = Path(__file__).parent / "data" / "recorded_pass.json.gz"


def test_every_decision_and_forecast_is_the_recorded_one() -> None:
    # Recorded with every open site forecast; under `fastest` without a hedge the pass now
    # forecasts only the sites that could be ranked first or second (ranking._best_first).
    recorded = json.loads(gzip.decompress(RECORDED.read_bytes()))
    routed = as_data(run())
    assert len(routed) == len(recorded) == JOBS
    left_out = 0
    for now, then in zip(routed, recorded, strict=True):
        job = then["job"]
        bounds = {c["site"]: c.pop("not_before") for c in now["candidates"]}
        unforecast = {site: bound for site, bound in bounds.items() if bound is not None}
        assert {**now, "candidates": None} == {**then, "candidates": None}, job
        assert [c for c in now["candidates"] if c["site"] not in unforecast] == [
            c for c in then["candidates"] if c["site"] not in unforecast], job
        for place, c in enumerate(then["candidates"]):
            if c["site"] in unforecast:
                f = c["forecast"]
                assert place >= 2, job
                assert f["staging"] + f["wait_median"] + f["runtime"] >= unforecast[c["site"]]
        left_out += len(unforecast)
    assert left_out > 200, left_out


def test_the_federation_hits_and_misses_the_caches() -> None:
    # The comparison above proves something only if jobs of one kind come back to a site
    # both unchanged (the forecast given again: the same object) and changed since.
    routed = run()
    given: dict[tuple[object, ...], set[int]] = {}
    again = afresh = 0
    for r in routed:
        job = r.job
        kind = (job.user, job.fingerprint, job.procs, job.time_limit, job.inputs,
                job.output_bytes)
        for candidate in r.decision.candidates:
            if candidate.forecast is None:
                continue
            seen = given.setdefault((kind, candidate.site), set())
            if seen:
                again += id(candidate.forecast) in seen
                afresh += id(candidate.forecast) not in seen
            seen.add(id(candidate.forecast))
    assert again > 300 and afresh > 300, (again, afresh)  # 527 and 2,261 when written
