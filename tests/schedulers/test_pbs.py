"""PBS Professional / OpenPBS builders and parsers, on recorded outputs.

PBS cannot be installed on this machine, so these fixtures (fixtures/pbs/) are recorded
formats, not outputs of a live system: `qstat -f -F json` as documented in OpenPBS
doc/man1/qstat.1B and the PBS design page PP-483 (pbspro.atlassian.net, "Enhance output
of qstat"), job attributes from doc/man1/pbs_job_attributes.7B, Exit_status values from
src/include/job.h, the accounting log from src/server/accounting.c, error texts and exit
statuses ("qstat: Unknown Job Id", 153) as recorded in public PBS tooling. Each file's
header cites its source.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout
from adapters.errors import SiteUnavailable, SubmitRejected, UnknownJob
from adapters.pbs import PbsDialect
from adapters.pbs.accounting import parse_records
from adapters.pbs.states import JOB_EXEC, STATES, ended
from tests.schedulers.recorded import load, result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000005"
WORKDIR = f"/scratch/gw/{TAG}"
IDS = [f"{n}.pbsserver" for n in range(101, 109)]


def request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {
        "tag": TAG, "workdir": WORKDIR, "argv": ["./a.out"],
        "resources": Resources(nodes=2, ranks=8, threads_per_rank=2, memory_mb=4096,
                               walltime_seconds=5400),
        "mpi": MpiRequest("mpirun"),
    }
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


def dialect(**kwargs: object) -> PbsDialect:
    return PbsDialect(DialectConfig(default_queue="workq", default_account="gw"), **kwargs)  # type: ignore[arg-type]


def test_qsub_argv_select_place_and_direct_output() -> None:
    command = dialect().submit_command(request(), JobLayout.of(WORKDIR))
    assert command.argv == (
        "qsub", "-N", TAG, "-o", f"{WORKDIR}/stdout", "-e", f"{WORKDIR}/stderr", "-j", "n",
        "-S", "/bin/sh", "-l", "walltime=1:30:00",
        "-l", "select=2:ncpus=8:mpiprocs=4:ompthreads=2:mem=4096mb", "-l", "place=scatter",
        "-k", "oed", "-q", "workq", "-A", "gw",
    )
    script = (command.stdin or b"").decode().splitlines()
    assert "#PBS -l select=2:ncpus=8:mpiprocs=4:ompthreads=2:mem=4096mb" in script
    # PBS has no working-directory option: the script changes there.
    assert f"cd {WORKDIR} || exit 1" in script
    assert script[-1] == "exec mpirun -n 8 ./a.out"


def test_qsub_answers() -> None:
    d = dialect()
    assert d.parse_submit(result("pbs", "qsub_ok.txt")) == "101.pbsserver"
    with pytest.raises(SubmitRejected, match="Unknown queue"):
        d.parse_submit(result("pbs", "qsub_unknown_queue.txt"))
    with pytest.raises(SiteUnavailable, match="cannot connect to server"):
        d.parse_submit(result("pbs", "qsub_server_down.txt"))


def test_qstat_json_states_and_exit_statuses() -> None:
    d = dialect()
    assert d.status_command(IDS[:2]) == ("qstat", "-f", "-F", "json", "-x", *IDS[:2])
    found = d.parse_status(result("pbs", "qstat_jobs.txt"), IDS)
    assert set(found) == set(IDS)
    ok = found["101.pbsserver"]
    assert (ok.state, ok.exit_code, ok.raw_state) == (NativeState.COMPLETED, 0,
                                                      "F (Exit_status 0)")
    assert ok.started_at == datetime(2025, 11, 22, 2, 15, 2, tzinfo=UTC)
    assert ok.ended_at == datetime(2025, 11, 22, 2, 15, 10, tzinfo=UTC)
    assert (found["102.pbsserver"].state, found["102.pbsserver"].exit_code) == (
        NativeState.FAILED, 3)
    killed = found["103.pbsserver"]  # 271 = 256 + SIGTERM
    assert (killed.state, killed.exit_code, killed.reason) == (NativeState.FAILED, 143,
                                                               "killed by signal 15")
    assert found["104.pbsserver"].reason == "TIMEOUT"  # JOB_EXEC_KILL_WALLTIME
    assert found["105.pbsserver"].state is NativeState.RUNNING
    queued = found["106.pbsserver"]
    assert queued.state is NativeState.QUEUED
    assert queued.reason == "Not Running: Insufficient amount of resource: ncpus"
    assert found["107.pbsserver"].state is NativeState.QUEUED
    deleted = found["108.pbsserver"]
    assert (deleted.state, deleted.exit_code) == (NativeState.FAILED, None)


def test_unknown_ids_are_left_out_and_known_ones_kept() -> None:
    d = dialect()
    found = d.parse_status(result("pbs", "qstat_unknown_id.txt"),
                           ["105.pbsserver", "199.pbsserver"])
    assert set(found) == {"105.pbsserver"}
    assert d.parse_status(result("pbs", "qstat_all_unknown.txt"), ["199.pbsserver"]) == {}
    with pytest.raises(SiteUnavailable):
        d.parse_status(result("pbs", "qstat_server_down.txt"), ["105.pbsserver"])


def test_longer_server_name_in_qstat_still_matches(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.pbs.states"):
        found = dialect().parse_status(result("pbs", "qstat_unknown_state.txt"),
                                       ["105.pbsserver"])
    assert found["105.pbsserver"].state is NativeState.UNKNOWN
    assert "'Z'" in caplog.text


def test_every_documented_state_and_exec_code_is_mapped() -> None:
    # qstat.1B "The job's state" / pbs_job_attributes.7B job_state.
    assert set(STATES) == set("BEFHMQRSTUWX")
    assert set(JOB_EXEC) == {*range(-7, 0), *range(-30, -9)}
    assert ended(-29, None)[1] == "TIMEOUT"
    assert ended(265, None) == (NativeState.FAILED, "killed by signal 9", 137)
    assert ended(-1, None)[1] == JOB_EXEC[-1]


def test_accounting_records_parse_quoted_values() -> None:
    records = parse_records(load("pbs", "accounting_records.txt").stdout.decode())
    assert [(r.type, r.native_id) for r in records] == [
        ("E", "101.pbsserver"), ("D", "110.pbsserver"), ("D", "111.pbsserver"),
        ("E", "111.pbsserver")]
    assert records[3].fields["account"] == "gateway project"
    assert records[0].fields["Resource_List.walltime"] == "01:00:00"


def test_accounting_only_when_the_log_directory_is_configured() -> None:
    assert dialect().accounting_commands(["101.pbsserver"]) == []
    d = dialect(accounting_dir="/var/spool/pbs/server_priv/accounting")
    assert d.accounting_commands(["101.pbsserver", "bad id"]) == [(
        "grep", "-h", "-r", "-F", "-e", ";E;101.pbsserver;", "-e", ";D;101.pbsserver;",
        "--", "/var/spool/pbs/server_priv/accounting")]
    found = d.parse_accounting(result("pbs", "accounting_records.txt"))
    assert (found["101.pbsserver"].state, found["101.pbsserver"].exit_code) == (
        NativeState.COMPLETED, 0)
    assert found["101.pbsserver"].ended_at == datetime.fromtimestamp(1763777710, UTC)
    # Deleted before it ran: a D record alone.
    assert found["110.pbsserver"].state is NativeState.CANCELLED
    assert found["110.pbsserver"].reason == "deleted by tbuser@login1"
    # Ran, then deleted: its E record has the last word.
    assert found["111.pbsserver"].reason == "killed by signal 15"
    assert d.parse_accounting(result("pbs", "accounting_none.txt")) == {}


def test_find_cancel_queues() -> None:
    d = dialect()
    assert d.find_commands(TAG) == [("qselect", "-x", "-N", TAG)]
    assert d.parse_find(result("pbs", "qselect_by_name.txt"), TAG) == "105.pbsserver"
    assert d.cancel_command("105.pbsserver") == ("qdel", "105.pbsserver")
    d.parse_cancel(result("pbs", "qdel_ok.txt"), "105.pbsserver")
    d.parse_cancel(result("pbs", "qdel_finished.txt"), "101.pbsserver")
    with pytest.raises(UnknownJob):
        d.parse_cancel(result("pbs", "qdel_unknown.txt"), "199.pbsserver")
    queues = {q.name: q for q in d.parse_queues(result("pbs", "qstat_queues.txt"))}
    assert set(queues) == {"workq", "closedq"}  # routing queues run no jobs
    workq = queues["workq"]
    assert (workq.default, workq.available, workq.max_walltime, workq.max_nodes) == (
        True, True, 86400, 4)
    assert (workq.jobs_running, workq.jobs_pending) == (1, 2)
    assert queues["closedq"].available is False
    assert d.estimate_command(request(), JobLayout.of(WORKDIR)) is None
