"""How a routing decision reads in a terminal: one row per site in ranked order (chosen,
candidate, or excluded with its reason), durations as a person reads them, and the
P(deadline) column under the deadline policy only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from gateway.cli import render
from gateway.cli.routing import candidates_table


def text(table: Table) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def forecast(wait: float, bound: float, runtime: float, staging: float) -> dict[str, Any]:
    return {"wait_median": wait, "wait_bound": bound, "runtime": runtime, "staging": staging,
            "completion": staging + wait + runtime,
            "completion_bound": staging + bound + runtime,
            "wait_quantiles": [(0.5, wait), (0.95, bound)], "basis": "observed waits (41)"}


def decision(policy: str = "fastest", **over: Any) -> Any:
    return {"decided_at": datetime(2026, 11, 24, 22, 0, tzinfo=UTC), "policy": policy,
            "hedge": 1, "deadline": None, "chosen": ["galaxy"], "why": "galaxy is first.",
            "candidates": [
                {"site": "galaxy", "excluded": None, "p_deadline": 0.97,
                 "forecast": forecast(95, 1800, 7200, 30) | {"wait_likely": 600,
                                                             "wait_if_late": 7200}},
                {"site": "roadrunner", "excluded": None, "p_deadline": 0.4,
                 "forecast": forecast(5400, 90000, 7000, 0)},
                {"site": "local", "excluded": "needs 128 cores on one node; local has 2",
                 "p_deadline": None, "forecast": None}], **over}


@pytest.mark.parametrize(("seconds", "shown"), [
    (None, "-"), (0, "0s"), (44.6, "45s"), (60, "1m"), (95, "1m35s"), (3600, "1h00m"),
    (3725, "1h02m"), (90000, "1d01h"), (-3, "0s")])
def test_durations(seconds: float | None, shown: str) -> None:
    assert render.duration(seconds) == shown


def test_rows_in_ranked_order_with_status_and_reason() -> None:
    rows = [line.split() for line in text(candidates_table(decision())).splitlines()]
    assert rows[0] == ["SITE", "STATUS", "LIKELY", "IF", "LATER", "WAIT", "WAIT", "95%",
                       "RUN", "STAGING", "COMPLETION", "BASIS", "/", "REASON"]
    # The likely wait (the densest 20-min window's centre) and the wait if the job has not
    # started within 10 min beside the median; a decision stored before they existed, or
    # with no history of late starts, shows "-" there.
    assert rows[1] == ["galaxy", "chosen", "10m", "2h00m", "1m35s", "30m", "2h00m", "30s",
                       "2h02m", "observed", "waits", "(41)"]
    assert rows[2] == ["roadrunner", "candidate", "-", "-", "1h30m", "1d01h", "1h56m", "0s",
                       "3h26m", "observed", "waits", "(41)"]
    assert rows[3] == ["local", "excluded", "-", "-", "-", "-", "-", "-", "-", "needs",
                       "128", "cores", "on", "one", "node;", "local", "has", "2"]


def test_a_run_time_without_history_is_unknown_not_zero() -> None:
    # Issue 28: no earlier run of the program (the API sends null) reads "unknown"; the
    # completion is what routing assumed, and the basis says what.
    guessed = decision()
    guessed["candidates"][0]["forecast"] |= {"runtime": None, "completion": 125.0}
    rows = [line.split() for line in text(candidates_table(guessed)).splitlines()]
    assert rows[1][:9] == ["galaxy", "chosen", "10m", "2h00m", "1m35s", "30m", "unknown",
                           "30s", "2m05s"]
    assert rows[2][6] == "1h56m"  # a predicted run time is shown as before


def test_a_last_resort_site_shows_its_caution() -> None:
    last = decision(chosen=["galaxy"], candidates=[
        {"site": "galaxy", "excluded": None, "p_deadline": None,
         "forecast": forecast(95, 1800, 7200, 30),
         "caution": "site 'galaxy' is out of routing (3 jobs of 2 users failed in a row), "
                    "but no other site can take this job now"}])
    shown = " ".join(text(candidates_table(last)).split())
    assert ("observed waits (41); site 'galaxy' is out of routing (3 jobs of 2 users failed "
            "in a row), but no other site can take this job now") in shown


def test_deadline_policy_shows_the_probability() -> None:
    shown = text(candidates_table(decision("deadline")))
    assert "P(DEADLINE)" in shown.splitlines()[0]
    assert "97%" in shown.splitlines()[1] and "40%" in shown.splitlines()[2]
    assert "P(DEADLINE)" not in text(candidates_table(decision()))


def test_quotes_show_as_a_column_when_priced() -> None:
    priced = decision("cheapest")
    for c, quote in zip(priced["candidates"], ("2.000", "8.000", None), strict=True):
        if quote is not None:
            c["quote_su"] = quote
    rows = [line.split() for line in text(candidates_table(priced)).splitlines()]
    assert rows[0][11:14] == ["QUOTE", "(SU)", "BASIS"]
    assert rows[1][:10] == ["galaxy", "chosen", "10m", "2h00m", "1m35s", "30m", "2h00m",
                            "30s", "2h02m", "2.000"]
    assert rows[2][9] == "8.000" and rows[3][9] == "-"
    # A cheapest job with a deadline also shows how likely each site makes it.
    with_deadline = text(candidates_table({**priced, "deadline": priced["decided_at"]}))
    assert "P(DEADLINE)" in with_deadline.splitlines()[0]
    assert "QUOTE" not in text(candidates_table(decision()))


def test_the_image_note_follows_the_basis() -> None:
    pulled = decision()
    pulled["candidates"][0]["image"] = "docker://x.org/a:1 is pulled by the gateway and staged"
    lines = text(candidates_table(pulled)).splitlines()
    assert "observed waits (41); docker://x.org/a:1 is pulled by the gateway" in lines[1]
    assert "pulled" not in lines[2]


def test_load_table_rows() -> None:
    taken = datetime(2026, 11, 24, 22, 0, tzinfo=UTC)
    probe = {"nodes": 1, "walltime": 3600, "wait_median": 1260.0, "wait_bound": 86400.0,
             "basis": "history site (41 waits)"}
    sites: Any = [
        {"name": "galaxy", "load": {"taken_at": taken, "queued_jobs": 6, "running_jobs": 1,
                                    "free_cores": 0, "total_cores": 2, "probe": probe}},
        {"name": "tiny", "load": {"taken_at": taken, "queued_jobs": 0, "running_jobs": 0,
                                  "free_cores": 3, "total_cores": None,
                                  "probe": {**probe, "wait_median": None,
                                            "wait_bound": None}}},
        {"name": "local", "load": None}]
    now = datetime(2026, 11, 24, 22, 1, 30, tzinfo=UTC)
    rows = [line.split() for line in text(render.load_table(sites, now)).splitlines()]
    assert rows[2] == ["galaxy", "6", "1", "0/2", "21m", "1d00h", "1m30s", "ago"]
    assert rows[3] == ["tiny", "0", "0", "3", "-", "-", "1m30s", "ago"]
    assert rows[4] == ["local", "-", "-", "-", "-", "-", "-"]


def test_sites_table_says_a_site_is_out_of_routing() -> None:
    site: Any = {"name": "galaxy", "kind": "sge", "state": "up", "reason": None,
                 "enabled": True, "drained": False, "max_nodes": 1, "cores_per_node": 2,
                 "isolation": None, "description": "SGE", "load": None,
                 "routing_ban": "3 jobs of 2 users failed in a row with signs of the site "
                                "(NODE_FAIL); out of routing until 2026-11-24 22:10:00 UTC "
                                "(540 s more)"}
    shown = text(render.sites_table([site, {**site, "name": "ok", "routing_ban": None}]))
    assert shown.splitlines()[1].split()[:5] == ["galaxy", "sge", "up,", "out", "of"]
    # The ban's reason: whole, on a line of its own below the table.
    assert ("galaxy is out of routing: 3 jobs of 2 users failed in a row with signs of the "
            "site (NODE_FAIL); out of routing until 2026-11-24 22:10:00 UTC (540 s more)"
            ) in shown.splitlines()
    assert shown.count("out of routing:") == 1


def test_a_site_routing_did_not_forecast_says_how_soon_it_could_finish() -> None:
    # A routing pass under `fastest` forecasts only the sites that could come first or
    # second; the others carry the soonest they could finish the job (`not_before`).
    far = {"site": "far", "excluded": None, "p_deadline": None, "forecast": None,
           "not_before": 86400.0}
    given = decision()
    given["candidates"].insert(2, far)
    rows = [line.split() for line in text(candidates_table(given)).splitlines()]
    assert rows[3] == ["far", "candidate", *["-"] * 7, "not", "forecast:", "it", "cannot",
                       "finish", "here", "within", "1d00h,", "after", "the", "leaders"]
