"""IBM Spectrum LSF builders and parsers, on recorded outputs.

LSF cannot be installed on this machine, so these fixtures (fixtures/lsf/) are recorded
formats, not outputs of a live system: `bjobs -o ... -json` and `bqueues -o ... -json` as
documented for LSF 10.1 (IBM LSF command reference; 10.1.0.2 release notes), the record
layout of a real bjobs -json output kept in TheRoddyWMS/BatchEuphoria's tests
(LSFJobManagerSpec.groovy), the messages bsub/bkill print (bsub(1), bkill(1), and
PSI/J's LSF executor src/psij/executors/batch/lsf.py). Each file's header cites its source.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta, timezone

import pytest

from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout
from adapters.errors import SiteUnavailable, SubmitRejected, UnknownJob
from adapters.lsf import LsfDialect
from adapters.lsf.states import STATES
from adapters.lsf.status import lsf_time
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000001"
WORKDIR = f"/scratch/gw/{TAG}"
NOW = datetime(2025, 11, 22, 3, 0, tzinfo=UTC)
IDS = ["2001", "2002", "2003", "2004", "2005", "2006", "2099"]


def dialect(**kwargs: object) -> LsfDialect:
    return LsfDialect(DialectConfig(default_queue="normal", default_account="gwproj"),
                      clock=lambda: NOW, **kwargs)  # type: ignore[arg-type]


def request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {
        "tag": TAG, "workdir": WORKDIR, "argv": ["./solver", "--in", "data 1"],
        "resources": Resources(nodes=2, ranks=4, memory_mb=1000, walltime_seconds=125),
        "mpi": MpiRequest("mpirun"),
    }
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


def test_bsub_argv() -> None:
    command = dialect().submit_command(request(), JobLayout.of(WORKDIR))
    assert command.argv == (
        "bsub", "-J", TAG, "-cwd", WORKDIR, "-o", f"{WORKDIR}/stdout", "-e", f"{WORKDIR}/stderr",
        "-W", "3", "-n", "4", "-R", "span[ptile=2]", "-R", "rusage[mem=500]",
        "-q", "normal", "-P", "gwproj",
    )
    script = (command.stdin or b"").decode().splitlines()
    assert "#BSUB -R span[ptile=2]" in script
    assert script[-1] == "exec mpirun -n 4 ./solver --in 'data 1'"
    assert "rusage" not in " ".join(dialect(memory=False).submit_command(
        request(), JobLayout.of(WORKDIR)).argv)


def test_bsub_answers() -> None:
    d = dialect()
    assert d.parse_submit(result("lsf", "bsub_ok.txt")) == "2001"
    with pytest.raises(SubmitRejected, match="No such queue"):
        d.parse_submit(result("lsf", "bsub_no_queue.txt"))
    with pytest.raises(SiteUnavailable, match="LSF is down"):
        d.parse_submit(result("lsf", "bsub_lsf_down.txt"))


def test_bjobs_json_states_exit_codes_and_reasons() -> None:
    d = dialect()
    assert d.status_command(["2001", "x"]) == (
        "bjobs", "-a", "-json", "-o",
        "jobid stat exit_code exit_reason pend_reason start_time finish_time job_name", "2001")
    found = d.parse_status(result("lsf", "bjobs_jobs.txt"), IDS)
    assert set(found) == set(IDS) - {"2099"}  # the "not found" record is left out
    running = found["2001"]
    assert running.state is NativeState.RUNNING
    assert running.started_at == datetime(2025, 11, 22, 2, 15, tzinfo=UTC)
    assert (found["2002"].state, found["2002"].reason) == (
        NativeState.QUEUED, "New job is waiting for scheduling")
    done = found["2003"]
    assert (done.state, done.exit_code) == (NativeState.COMPLETED, 0)
    assert done.ended_at == datetime(2025, 11, 22, 2, 16, tzinfo=UTC)  # " L" flag dropped
    assert (found["2004"].state, found["2004"].exit_code) == (NativeState.FAILED, 1)
    assert (found["2005"].state, found["2005"].reason) == (NativeState.FAILED, "TIMEOUT")
    owner = found["2006"]
    assert owner.state is NativeState.CANCELLED and owner.reason.startswith("TERM_OWNER")


def test_not_found_and_unknown_state(caplog: pytest.LogCaptureFixture) -> None:
    d = dialect()
    assert d.parse_status(result("lsf", "bjobs_not_found.txt"), ["2099"]) == {}
    with caplog.at_level(logging.WARNING, logger="adapters.lsf.states"):
        found = d.parse_status(result("lsf", "bjobs_unknown_state.txt"), ["2001"])
    assert found["2001"].state is NativeState.UNKNOWN and "'FROZEN'" in caplog.text


def test_every_documented_state_is_mapped() -> None:
    # bjobs(1), job status.
    assert set(STATES) == {"PEND", "PROV", "PSUSP", "RUN", "USUSP", "SSUSP", "DONE", "EXIT",
                           "UNKWN", "WAIT", "ZOMBI"}


def test_yearless_times_never_land_in_the_future() -> None:
    utc = UTC
    assert lsf_time("Dec 31 23:50", utc, datetime(2026, 1, 1, 0, 5, tzinfo=UTC)) == datetime(
        2025, 12, 31, 23, 50, tzinfo=UTC)
    assert lsf_time("Nov 22 02:16 E", timezone(timedelta(hours=1)), NOW) == datetime(
        2025, 11, 22, 1, 16, tzinfo=UTC)
    assert lsf_time("", utc, NOW) is None


def test_find_cancel_queues() -> None:
    d = dialect()
    assert d.find_commands(TAG)[0][-2:] == ("-J", TAG)
    assert d.parse_find(result("lsf", "bjobs_by_name.txt"), TAG) == "2001"
    assert d.parse_find(result("lsf", "bjobs_not_found.txt"), TAG) is None
    assert d.cancel_command("2001") == ("bkill", "2001")
    d.parse_cancel(result("lsf", "bkill_ok.txt"), "2001")
    d.parse_cancel(result("lsf", "bkill_finished.txt"), "2003")
    with pytest.raises(UnknownJob):
        d.parse_cancel(result("lsf", "bkill_unknown.txt"), "2099")
    queues = {q.name: q for q in d.parse_queues(result("lsf", "bqueues.txt"))}
    assert queues["normal"].default and queues["normal"].available
    assert (queues["normal"].jobs_running, queues["normal"].jobs_pending) == (2, 1)
    assert queues["night"].available is False
    assert d.accounting_commands(["2001"]) == []
    assert d.estimate_command(request(), JobLayout.of(WORKDIR)) is None
