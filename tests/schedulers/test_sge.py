"""Grid Engine builders and parsers, on recorded outputs.

Fixtures (fixtures/sge/): `real_*` were recorded from the testbed's Grid Engine 8.1.9 site
(galaxy) over SSH, running this dialect's argv; `qacct_*` are the real output of Debian's
8.1.9 `qacct -j` reading accounting records built per accounting(5) (cases the testbed run
did not produce); the others are derived from Son of Grid Engine's qstat_xml.c, the
message formats in the 8.1.9 binaries, qstat(1), sge_status(5) and TESTBED-NOTES.md. Each
file's header says which. (The real qacct answers were recorded before the dialect added
`-m`, which prints the same for a job with a single record.)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout, MpiFlavor
from adapters.errors import SiteUnavailable, SubmitRejected, UnknownJob
from adapters.sge import SgeDialect
from adapters.sge.states import STATES
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000007"
WORKDIR = f"/scratch/gw/{TAG}"
OPENMPI = MpiFlavor("openmpi", mpirun=("mpirun.openmpi",))


def request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {
        "tag": TAG, "workdir": WORKDIR, "argv": ["./pingpong", "100"],
        "resources": Resources(nodes=1, ranks=2, memory_mb=2000, walltime_seconds=600),
        "mpi": MpiRequest("mpirun", "openmpi"),
    }
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


def dialect(**kwargs: object) -> SgeDialect:
    config = DialectConfig(default_queue="all.q", mpi_flavors=(OPENMPI,))
    return SgeDialect(config, parallel_environment="mpi", **kwargs)  # type: ignore[arg-type]


def test_qsub_argv_with_parallel_environment_and_limits() -> None:
    command = dialect(memory_resource="h_vmem").submit_command(request(), JobLayout.of(WORKDIR))
    assert command.argv == (
        "qsub", "-terse", "-N", TAG, "-wd", WORKDIR, "-o", f"{WORKDIR}/stdout",
        "-e", f"{WORKDIR}/stderr", "-j", "n", "-S", "/bin/sh", "-l", "h_rt=600",
        "-w", "e", "-q", "all.q", "-pe", "mpi", "2", "-l", "h_vmem=1000M",
    )
    script = command.stdin.decode() if command.stdin else ""
    assert "#$ -pe mpi 2" in script.splitlines()
    assert script.splitlines()[-1] == "exec mpirun.openmpi -n 2 ./pingpong 100"


def test_serial_job_needs_no_parallel_environment() -> None:
    argv = SgeDialect().submit_command(
        request(resources=Resources(walltime_seconds=60), mpi=MpiRequest()),
        JobLayout.of(WORKDIR)).argv
    assert "-pe" not in argv


def test_multi_slot_job_without_a_pe_is_refused() -> None:
    with pytest.raises(SubmitRejected, match="no parallel environment"):
        SgeDialect().submit_command(request(), JobLayout.of(WORKDIR))


@pytest.mark.parametrize("workdir", ["/scratch/a:b", "/scratch/a,b"])
def test_paths_qsub_would_misread_are_refused(workdir: str) -> None:
    with pytest.raises(SubmitRejected, match="reads as syntax"):
        dialect().submit_command(request(workdir=workdir), JobLayout.of(workdir))


def test_srun_is_refused_on_grid_engine() -> None:
    with pytest.raises(SubmitRejected, match="Slurm"):
        dialect().submit_command(request(mpi=MpiRequest("srun")), JobLayout.of(WORKDIR))


def test_parse_submit() -> None:
    assert dialect().parse_submit(result("sge", "real_qsub_ok.txt")) == "8"
    with pytest.raises(SubmitRejected, match='unknown queue "nope"'):
        dialect().parse_submit(result("sge", "real_qsub_unknown_queue.txt"))
    for too_big in ("real_qsub_too_many_slots.txt", "real_qsub_walltime_too_long.txt"):
        with pytest.raises(SubmitRejected, match="no suitable queues"):
            dialect().parse_submit(result("sge", too_big))
    with pytest.raises(SiteUnavailable):
        dialect().parse_submit(result("sge", "qsub_qmaster_down.txt"))


def test_qstat_xml_lists_running_and_pending_jobs() -> None:
    d = dialect()
    assert d.status_command(["7"]) == ("qstat", "-xml", "-u", "*")
    found = d.parse_status(result("sge", "qstat_xml.txt"), ["7", "8", "9", "10", "11", "12"])
    assert set(found) == {"7", "8", "9", "10", "11"}  # 21 is not ours; 12 has left the queue
    assert found["7"].state is NativeState.RUNNING
    assert found["7"].started_at == datetime(2025, 11, 22, 2, 15, 27, tzinfo=UTC)
    assert found["8"].state is NativeState.QUEUED and found["8"].started_at is None
    assert found["9"].state is NativeState.QUEUED and "error state" in (found["9"].reason or "")
    assert found["10"].reason == "on hold"
    assert (found["11"].state, found["11"].raw_state) == (NativeState.RUNNING, "dr")


def test_real_qstat_running_and_pending() -> None:
    found = dialect().parse_status(result("sge", "real_qstat_live.txt"), ["10", "11", "12"])
    assert {i: (s.state, s.raw_state) for i, s in found.items()} == {
        "10": (NativeState.RUNNING, "r"), "11": (NativeState.RUNNING, "r"),
        "12": (NativeState.QUEUED, "qw")}
    assert found["10"].started_at == datetime(2026, 11, 22, 4, 9, 1, tzinfo=UTC)


def test_empty_queue_and_unreachable_qmaster() -> None:
    assert dialect().parse_status(result("sge", "qstat_xml_empty.txt"), ["7"]) == {}
    with pytest.raises(SiteUnavailable, match="unable to send message to qmaster"):
        dialect().parse_status(result("sge", "qstat_qmaster_down.txt"), ["7"])


def test_unknown_state_is_unknown_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.sge.states"):
        found = dialect().parse_status(result("sge", "qstat_xml_unknown_state.txt"), ["7"])
    assert found["7"].state is NativeState.UNKNOWN and "'Xw'" in caplog.text


def test_every_documented_state_is_mapped() -> None:
    # sge_status(5), "Job state" table (Son of Grid Engine 8.1.9).
    documented = {
        "qw", "Rq", "hqw", "hRwq", "r", "hr", "t", "Rr", "Rt", "s", "ts", "S", "tS", "T", "tT",
        "Rs", "Rts", "RS", "RtS", "RT", "RtT", "Eqw", "Ehqw", "EhRqw", "dr", "dt", "dRr", "dRt",
        "ds", "dS", "dT", "dRs", "dRS", "dRT",
    }
    assert set(STATES) == documented


def test_qacct_one_command_per_job() -> None:
    assert dialect().accounting_commands(["7", "8", "x"]) == [
        ("qacct", "-m", "-j", "7"), ("qacct", "-m", "-j", "8")]


def test_qacct_completed_failed_and_killed() -> None:
    d = dialect()
    done = d.parse_accounting(result("sge", "real_qacct_completed.txt"))["8"]
    assert (done.state, done.exit_code) == (NativeState.COMPLETED, 0)
    assert done.started_at == datetime(2026, 11, 22, 4, 9, 0, tzinfo=UTC)
    failed = d.parse_accounting(result("sge", "real_qacct_exit3.txt"))["9"]
    assert (failed.state, failed.exit_code, failed.reason) == (NativeState.FAILED, 3,
                                                               "NonZeroExitCode")
    # qdel of a running job: failed 100, exit 137, long before its h_rt.
    killed = d.parse_accounting(result("sge", "real_qacct_qdel_running.txt"))["10"]
    assert (killed.state, killed.exit_code, killed.reason) == (NativeState.FAILED, 137,
                                                               "killed by signal 9")
    assert killed.raw_state == "failed 100 : assumedly after job, exit_status 137"
    # h_rt enforced by qmaster (failed 37), as the testbed did it...
    timeout = d.parse_accounting(result("sge", "real_qacct_h_rt.txt"))["11"]
    assert (timeout.state, timeout.reason, timeout.exit_code) == (NativeState.FAILED,
                                                                  "TIMEOUT", 137)
    # ...and by execd (failed 100) once the job has run its whole h_rt.
    assert d.parse_accounting(result("sge", "qacct_h_rt.txt"))["14"].reason == "TIMEOUT"
    assert d.parse_accounting(result("sge", "qacct_mpi_pe.txt"))["15"].state is (
        NativeState.COMPLETED)
    never = d.parse_accounting(result("sge", "qacct_failed_output_file.txt"))["16"]
    assert never.state is NativeState.FAILED and never.started_at is None
    assert never.reason == "failed 26: opening input/output file"


def test_qacct_keeps_no_record_of_a_job_deleted_while_pending() -> None:
    assert dialect().parse_accounting(result("sge", "real_qacct_deleted_pending.txt")) == {}


def test_find_by_tag_in_queue_then_accounting() -> None:
    d = dialect()
    name = "gw-rec20540-0000-4000-8000-000000000001"
    qstat, qacct = d.find_commands(name)
    assert qacct == ("qacct", "-m", "-j", name)
    assert d.parse_find(result("sge", "qstat_xml.txt", qstat), TAG) == "7"
    assert d.parse_find(result("sge", "qstat_xml.txt", qstat), "gw-none") is None
    assert d.parse_find(result("sge", "real_qacct_by_name.txt", qacct), name) == "8"
    assert d.parse_find(result("sge", "real_qacct_deleted_pending.txt", qacct), name) is None


def test_qdel() -> None:
    d = dialect()
    assert d.cancel_command("7") == ("qdel", "7")
    d.parse_cancel(result("sge", "real_qdel_running.txt"), "10")
    d.parse_cancel(result("sge", "real_qdel_pending.txt"), "12")
    with pytest.raises(UnknownJob, match="does not exist"):
        d.parse_cancel(result("sge", "real_qdel_unknown.txt"), "999999")


def test_no_accounting_file_yet_means_no_records() -> None:
    # A cancelled pending job on a fresh cluster: it vanished, and accounting answered.
    assert dialect().parse_accounting(result("sge", "real_qacct_no_accounting_file.txt")) == {}


def test_cluster_queue_summary() -> None:
    queues = {q.name: q for q in dialect().parse_queues(result("sge", "qstat_gc.txt"))}
    assert queues["all.q"].default and queues["all.q"].available
    assert (queues["all.q"].cpus_total, queues["all.q"].cpus_idle) == (2, 1)
    assert queues["broken.q"].available is False
    (real,) = dialect().parse_queues(result("sge", "real_qstat_gc.txt"))
    assert (real.name, real.default, real.available, real.cpus_idle, real.cpus_total) == (
        "all.q", True, True, 2, 2)


def test_no_start_estimate() -> None:
    assert dialect().estimate_command(request(), JobLayout.of(WORKDIR)) is None
