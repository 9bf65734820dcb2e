"""Importing a site's past queue waits (SWF logs, qacct and sacct dumps) starts its wait
history: routing then forecasts the site's waits from its own records."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.domain.errors import Invalid
from gateway.runtime import Runtime
from gateway.scheduling.prediction.history_import import (
    HistoryFormatError,
    from_qacct,
    from_sacct,
    from_swf,
)
from gateway.services.routing.history_import import import_history
from tests.conftest import MakeUser
from tests.schedulers.recorded import result

SWF = """; Version: 2.2
; UnixStartTime: 1000000000
; MaxProcs: 8
    1      0   600   100   1  -1  -1   1   300  -1  1  7  1  3  2  -1  -1  -1
    2     10    -1    50   2  -1  -1   2    60  -1  5  7  1  3  2  -1  -1  -1
    3     20    30    40   4  -1  -1   4    -1  -1  1  -1 1  3  -1 -1  -1  -1
"""


def test_swf_waits_are_dated_from_the_logs_start(tmp_path: Path) -> None:
    log = tmp_path / "site.swf"
    log.write_text(SWF)
    found = from_swf(log)
    assert found.skipped == 1  # job 2 never started (wait -1)
    first, third = found.waits
    assert (first.queue, first.procs, first.time_limit, first.user, first.wait,
            first.started) == ("2", 1, 300.0, "swf:7", 600.0, 1_000_000_600.0)
    assert (third.queue, third.time_limit, third.user, third.started) == (
        "", None, None, 1_000_000_050.0)


def test_qacct_dump_recorded_on_galaxy() -> None:
    text = result("sge", "real_qacct_completed.txt").stdout.decode()
    (wait,) = from_qacct(text).waits
    assert (wait.queue, wait.procs, wait.user, wait.wait) == ("all.q", 1, "gwcomm", 0.0)
    assert wait.started == datetime(2026, 11, 22, 4, 9, tzinfo=UTC).timestamp()


def test_sacct_dump_recorded_on_roadrunner() -> None:
    text = result("slurm", "real_sacct_history_dump.txt").stdout.decode()
    first, second = from_sacct(text.splitlines()).waits
    assert (first.queue, first.procs, first.time_limit, first.user, first.wait) == (
        "debug", 2, 60.0, "gwcomm", 1.0)
    assert (second.procs, second.time_limit, second.wait, second.started) == (
        1, 120.0, 5.0, 1795564580.0)


def test_sacct_dump_with_epoch_times() -> None:
    # The SACCT_FORMAT columns, SLURM_TIME_FORMAT=%s (sacct(1): --parsable2, --format).
    lines = ["7|alice|batch|2|60|1795320000|1795320090|COMPLETED",
             "8|bob|debug|1|UNLIMITED|1795320010|Unknown|PENDING",
             "9|bob|debug|1|Partition_Limit|1795320010|1795320010|CANCELLED by 0"]
    found = from_sacct(lines)
    assert found.skipped == 1
    first, second = found.waits
    assert (first.queue, first.procs, first.time_limit, first.user, first.wait) == (
        "batch", 2, 3600.0, "alice", 90.0)
    assert (second.time_limit, second.wait) == (None, 0.0)
    with pytest.raises(HistoryFormatError, match="line 1: 3 fields, expected 8"):
        from_sacct(["7|alice|batch"])


def test_imported_waits_feed_routing_forecasts(client: TestClient, runtime: Runtime,
                                               make_user: MakeUser, tmp_path: Path) -> None:
    user = make_user()
    spec = {"name": "e", "executable": "/bin/true", "resources": {"walltime": 600}}
    before = client.post("/api/v1/jobs:estimate", json=spec, headers=user.headers).json()
    assert before["candidates"][0]["forecast"]["basis"].startswith("live queue")
    # 100 one-core jobs of the site's past, each waited ten minutes.
    log = tmp_path / "local.swf"
    log.write_text("; UnixStartTime: 1700000000\n" + "".join(
        f"{n} {n * 60} 600 30 1 -1 -1 1 600 -1 1 1 1 1 1 -1 -1 -1\n" for n in range(1, 101)))
    with runtime.unit_of_work() as session:
        found = import_history(session, runtime.sites, "local", log, "swf")
    assert (len(found.waits), found.skipped) == (100, 0)
    after = client.post("/api/v1/jobs:estimate", json=spec, headers=user.headers).json()
    forecast = after["candidates"][0]["forecast"]
    assert forecast["basis"].startswith("history"), forecast
    assert forecast["wait_median"] == 600.0 and forecast["wait_bound"] >= 600.0


def test_bad_imports_say_why(runtime: Runtime, tmp_path: Path) -> None:
    dump = tmp_path / "dump.txt"
    dump.write_text("7|alice\n")
    with runtime.unit_of_work() as session:
        with pytest.raises(Invalid, match=re.escape("Unknown site 'nowhere'. Known sites: local.")):
            import_history(session, runtime.sites, "nowhere", dump, "sacct")
        with pytest.raises(Invalid, match=re.escape("dump.txt: line 1: 2 fields, expected 8")):
            import_history(session, runtime.sites, "local", dump, "sacct")
        with pytest.raises(Invalid, match="unknown format 'csv'"):
            import_history(session, runtime.sites, "local", dump, "csv")
        with pytest.raises(Invalid, match="cannot read"):
            import_history(session, runtime.sites, "local", tmp_path / "missing", "qacct")
