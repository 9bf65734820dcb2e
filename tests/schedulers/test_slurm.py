"""Slurm builders and parsers, on recorded outputs.

Fixtures (fixtures/slurm/): the `real_*` ones were recorded from a real Slurm 22.05.8
(private slurmctld + slurmd, no slurmdbd) running gridgate's own argv; the others are
derived from TESTBED-NOTES.md "Output formats seen" and its gotchas, the Slurm 22.05 man
pages squeue(1), sacct(1), sbatch(1), sinfo(1), and FirecREST v2's recorded sacct output
(sacct needs slurmdbd, which the recording cluster did not run). Each file's header says
which. The live testbed tests run the same dialect against the testbed's Slurm.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta, timezone

import pytest

from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout, MpiFlavor
from adapters.errors import SiteUnavailable, SubmitRejected, UnknownJob
from adapters.slurm import SlurmCommands, SlurmDialect
from adapters.slurm.script import slurm_time
from adapters.slurm.states import STATES
from adapters.transport import CommandResult
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000007"
WORKDIR = f"/scratch/gw/{TAG}"
T0 = datetime(2025, 11, 22, 2, 15, tzinfo=UTC)
MPICH = MpiFlavor("mpich", mpirun=("mpirun.mpich",), ranks_per_node_args=("-ppn", "{n}"),
                  srun_mpi="pmi2", setup=("module load mpich",))


def request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {
        "tag": TAG, "workdir": WORKDIR, "argv": ["hostname"],
        "resources": Resources(nodes=2, ranks=4, ranks_per_node=2, threads_per_rank=2,
                               memory_mb=1500, walltime_seconds=90),
    }
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


def dialect(**config: object) -> SlurmDialect:
    return SlurmDialect(DialectConfig(**config), SlurmCommands(sbatch="/opt/slurm/bin/sbatch"))  # type: ignore[arg-type]


# -- submit ---------------------------------------------------------------------------


def test_submit_argv_carries_every_option_that_matters_on_the_command_line() -> None:
    d = dialect(default_queue="debug", default_account="gateway", extra_submit_args=("--qos=gw",))
    command = d.submit_command(request(), JobLayout.of(WORKDIR))
    assert command.argv == (
        "/opt/slurm/bin/sbatch", "--parsable", "--qos=gw",
        f"--job-name={TAG}", f"--comment={TAG}", f"--chdir={WORKDIR}",
        f"--output={WORKDIR}/stdout", f"--error={WORKDIR}/stderr", "--time=0-00:01:30",
        "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--cpus-per-task=2", "--mem=1500M",
        "--partition=debug", "--account=gateway",
    )
    # The script goes on stdin and is the rendered one.
    assert command.stdin == d.render_script(request(), JobLayout.of(WORKDIR)).encode()


def test_a_qos_is_sent_as_named() -> None:
    argv = dialect().submit_command(request(qos="long"), JobLayout.of(WORKDIR)).argv
    assert argv[-1] == "--qos=long"
    assert not any(word.startswith("--qos") for word in dialect().submit_command(
        request(), JobLayout.of(WORKDIR)).argv)


def test_request_partition_and_account_win_over_site_defaults() -> None:
    d = dialect(default_queue="debug", default_account="gateway")
    argv = d.submit_command(request(partition="long", account="proj7"), JobLayout.of(WORKDIR)).argv
    assert "--partition=long" in argv and "--account=proj7" in argv
    assert "--partition=debug" not in argv and "--account=gateway" not in argv


def test_script_repeats_options_as_directives_and_passes_only_mail_directives() -> None:
    user = ("#!/bin/bash\n#SBATCH --mail-type END,FAIL\n#SBATCH   --mail-user=ada@example.org\n"
            "echo hi\n#SBATCH --late\n")
    script = dialect().render_script(request(argv=None, script=user), JobLayout.of(WORKDIR))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/sh"
    assert f"#SBATCH --job-name={TAG}" in lines
    assert "#SBATCH --time=0-00:01:30" in lines
    # The user's mail directives pass, rewritten, after the gateway's own...
    assert lines.index("#SBATCH --mail-type=END,FAIL") > lines.index(f"#SBATCH --job-name={TAG}")
    assert "#SBATCH --mail-user=ada@example.org" in lines
    # ...but only from the leading block: sbatch stops reading at the first command.
    assert not any("late" in line for line in lines)
    # A script with #! runs as itself, from the job's control directory.
    assert lines[-1] == f"exec {WORKDIR}/.gridgate/script"
    with pytest.raises(SubmitRejected, match="script line 2 '#SBATCH --partition=sneaky'"):
        dialect().render_script(
            request(argv=None, script="#!/bin/sh\n#SBATCH --partition=sneaky\n"),
            JobLayout.of(WORKDIR))


def test_mpi_launch_lines_for_srun_and_mpirun() -> None:
    d = dialect(mpi_flavors=(MPICH,))
    srun = d.render_script(request(mpi=MpiRequest("srun", "mpich")), JobLayout.of(WORKDIR))
    assert srun.splitlines()[-1] == "exec srun --mpi=pmi2 --cpus-per-task=2 hostname"
    assert "module load mpich" in srun.splitlines()
    mpirun = d.render_script(request(mpi=MpiRequest("mpirun", None)), JobLayout.of(WORKDIR))
    assert mpirun.splitlines()[-1] == "exec mpirun.mpich -n 4 -ppn 2 hostname"


def test_unknown_mpi_flavor_is_refused_with_the_offered_ones() -> None:
    with pytest.raises(SubmitRejected, match="offered: mpich"):
        dialect(mpi_flavors=(MPICH,)).submit_command(
            request(mpi=MpiRequest("mpirun", "openmpi")), JobLayout.of(WORKDIR))


@pytest.mark.parametrize("bad", [
    {"tag": "gw,other"}, {"tag": "-x"}, {"workdir": "relative/dir"},
    {"workdir": "/a/../etc"}, {"env": {"BAD-NAME": "x"}}, {"env": {"OK": "a\x00b"}},
    {"argv": ["-rf"]}, {"partition": "--uid=0"}, {"argv": None, "script": None},
])
def test_invalid_requests_are_refused_before_anything_runs(bad: dict[str, object]) -> None:
    with pytest.raises(SubmitRejected):
        dialect().submit_command(request(**bad), JobLayout.of(WORKDIR))


def test_slurm_time_format() -> None:
    assert slurm_time(90) == "0-00:01:30"
    assert slurm_time(3 * 86400 + 3661) == "3-01:01:01"


def test_parse_submit_reads_the_id_with_or_without_cluster() -> None:
    d = dialect()
    assert d.parse_submit(result("slurm", "sbatch_parsable.txt")) == "7"
    assert d.parse_submit(result("slurm", "real_sbatch_parsable.txt")) == "6"
    assert d.parse_submit(result("slurm", "sbatch_parsable_cluster.txt")) == "31"


@pytest.mark.parametrize("fixture, message", [
    ("real_sbatch_invalid_partition.txt",
     "invalid partition specified: nope sbatch: error: Batch job submission failed: "
     "Invalid partition name specified"),
    ("real_sbatch_too_many_nodes.txt", "More processors requested than permitted"),
    ("real_sbatch_two_nodes.txt", "Node count specification invalid"),
])
def test_refusals_carry_the_schedulers_own_message(fixture: str, message: str) -> None:
    with pytest.raises(SubmitRejected) as caught:
        dialect().parse_submit(result("slurm", fixture))
    assert message in caught.value.message
    assert caught.value.transient is False


def test_controller_down_is_transient_not_a_refusal() -> None:
    with pytest.raises(SiteUnavailable, match="Unable to contact slurm controller"):
        dialect().parse_submit(result("slurm", "sbatch_controller_down.txt"))


def test_missing_sbatch_marks_the_site_down() -> None:
    from adapters.transport import CommandResult

    missing = CommandResult(("sbatch",), 127, b"", b"sh: 1: sbatch: not found\n")
    with pytest.raises(SiteUnavailable, match="binary paths"):
        dialect().parse_submit(missing)


def test_test_only_estimate() -> None:
    d = SlurmDialect(DialectConfig(timezone=timezone(timedelta(hours=1))))
    command = d.estimate_command(request(), JobLayout.of(WORKDIR))
    assert command.argv[:4] == ("env", "SLURM_TIME_FORMAT=%s", "sbatch", "--test-only")
    assert "--parsable" not in command.argv
    estimate = d.parse_estimate(result("slurm", "sbatch_test_only.txt"))
    assert estimate is not None
    # 02:15:35 local at UTC+1.
    assert estimate.start == datetime(2026, 11, 22, 1, 15, 35, tzinfo=UTC)
    assert (estimate.queue, estimate.nodes, estimate.processors) == ("debug", ("sitea",), 2)
    real = d.parse_estimate(result("slurm", "real_sbatch_test_only.txt"))
    assert real is not None and real.start == datetime.fromtimestamp(1795324230, UTC)


# -- status ---------------------------------------------------------------------------


def test_squeue_argv_asks_for_many_ids_with_an_explicit_format() -> None:
    assert dialect().status_command(["7", "8", "not-an-id"]) == (
        "env", "SLURM_TIME_FORMAT=%s", "squeue", "--noheader", "--states=all", "--jobs=7,8",
        "--format=%i|%T|%r|%S|%j",
    )


def test_squeue_rows() -> None:
    ids = ["7", "8", "9", "10", "11"]
    found = dialect().parse_status(result("slurm", "squeue_active.txt"), ids)
    assert set(found) == {"7", "8", "9", "10"}
    assert found["7"].state is NativeState.RUNNING
    assert found["7"].started_at == T0 + timedelta(seconds=10)
    assert found["8"].state is NativeState.QUEUED and found["8"].reason == "Resources"
    assert found["8"].started_at is None  # %S of a pending job is only a forecast
    assert found["9"].state is NativeState.RUNNING  # COMPLETING is not over
    assert found["10"].state is NativeState.CANCELLED and found["10"].raw_state == "CANCELLED"


def test_squeue_iso_times_are_read_in_the_sites_zone() -> None:
    d = SlurmDialect(DialectConfig(timezone=timezone(timedelta(hours=-5))))
    found = d.parse_status(result("slurm", "squeue_iso_times.txt"), ["7"])
    assert found["7"].started_at == datetime(2026, 11, 22, 6, 58, 50, tzinfo=UTC)


def test_squeue_of_a_purged_id_is_no_answer_not_an_error() -> None:
    assert dialect().parse_status(result("slurm", "real_squeue_invalid_id.txt"), ["9999"]) == {}


def test_real_squeue_states() -> None:
    found = dialect().parse_status(result("slurm", "real_squeue_states.txt"),
                                   ["6", "7", "8", "9", "10"])
    assert {i: s.state for i, s in found.items()} == {
        "6": NativeState.RUNNING, "7": NativeState.FAILED, "8": NativeState.COMPLETED,
        "9": NativeState.CANCELLED, "10": NativeState.QUEUED}
    assert found["6"].started_at == datetime.fromtimestamp(1795320326, UTC)
    assert (found["7"].reason, found["7"].exit_code) == ("NonZeroExitCode", None)
    assert (found["8"].exit_code, found["10"].reason, found["10"].started_at) == (
        0, "Resources", None)
    timeout = dialect().parse_status(result("slurm", "real_squeue_timeout.txt"), ["6"])["6"]
    assert (timeout.state, timeout.reason, timeout.raw_state) == (
        NativeState.FAILED, "TIMEOUT", "TIMEOUT")


def test_unknown_state_is_unknown_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.slurm.states"):
        found = dialect().parse_status(result("slurm", "squeue_unknown_state.txt"), ["7"])
    assert found["7"].state is NativeState.UNKNOWN
    assert found["7"].raw_state == "POWERED_DOWN_SOMEHOW"
    assert "POWERED_DOWN_SOMEHOW" in caplog.text


def test_every_documented_state_is_mapped() -> None:
    # squeue(1) and sacct(1) JOB STATE CODES, Slurm 22.05.
    documented = {
        "BOOT_FAIL", "CANCELLED", "COMPLETED", "CONFIGURING", "COMPLETING", "DEADLINE",
        "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "PENDING", "PREEMPTED", "RUNNING",
        "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD", "REQUEUED", "RESIZING", "REVOKED",
        "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED", "SUSPENDED", "TIMEOUT",
    }
    assert set(STATES) == documented


# -- accounting -----------------------------------------------------------------------


def test_sacct_argv_is_parsable_text_for_allocations() -> None:
    assert dialect().accounting_commands(["7", "x"]) == [(
        "env", "SLURM_TIME_FORMAT=%s", "sacct", "--parsable2", "--noheader", "--allocations",
        "--allusers", "--jobs=7", "--format=JobID,State,ExitCode,Start,End,Reason,JobName",
    )]
    assert dialect().accounting_commands(["x"]) == []


def test_sacct_final_states_exit_codes_and_reasons() -> None:
    found = dialect().parse_accounting(result("slurm", "sacct_finished.txt"))
    done = found["7"]
    assert (done.state, done.exit_code, done.reason) == (NativeState.COMPLETED, 0, None)
    assert done.started_at == T0 + timedelta(seconds=10)
    assert done.ended_at == T0 + timedelta(seconds=70)
    failed = found["11"]
    assert (failed.state, failed.exit_code, failed.reason) == (NativeState.FAILED, 3,
                                                               "NonZeroExitCode")
    cancelled = found["12"]
    assert cancelled.state is NativeState.CANCELLED
    assert cancelled.raw_state == "CANCELLED by 2001"
    assert cancelled.exit_code is None  # sacct says 0:0: it has no exit status
    timeout = found["13"]
    assert (timeout.state, timeout.reason, timeout.exit_code) == (NativeState.FAILED,
                                                                  "TIMEOUT", None)
    assert found["14"].reason == "OUT_OF_MEMORY"
    pending = found["15"]
    assert (pending.state, pending.reason, pending.started_at, pending.exit_code) == (
        NativeState.QUEUED, "Dependency", None, None)
    # Cancelled before it started: no start time.
    assert found["16"].state is NativeState.CANCELLED and found["16"].started_at is None


def test_real_sacct_from_the_testbed() -> None:
    found = dialect().parse_accounting(result("slurm", "real_sacct_finished.txt"))
    summary = {i: (s.state, s.raw_state, s.reason, s.exit_code) for i, s in found.items()}
    assert summary == {
        "3": (NativeState.COMPLETED, "COMPLETED", None, 0),
        "4": (NativeState.FAILED, "FAILED", "NonZeroExitCode", 3),
        "5": (NativeState.CANCELLED, "CANCELLED by 2001", None, None),
        "6": (NativeState.FAILED, "TIMEOUT", "TIMEOUT", None),
        "7": (NativeState.CANCELLED, "CANCELLED by 2001", None, None),
    }
    assert found["6"].ended_at == datetime.fromtimestamp(1795320624, UTC)
    live = dialect().parse_status(result("slurm", "real_squeue_live.txt"), list("34567"))
    assert (live["6"].state, live["6"].reason) == (NativeState.QUEUED, "Resources")
    assert (live["7"].reason, live["5"].state) == ("Priority", NativeState.RUNNING)
    name = "gw-rec20557-0000-4000-8000-000000000001"
    assert dialect().parse_find(result("slurm", "real_sacct_by_name.txt"), name) == "3"


def test_sacct_failure_is_transient() -> None:
    with pytest.raises(SiteUnavailable, match="Problem talking to the database"):
        dialect().parse_accounting(result("slurm", "sacct_dbd_down.txt"))
    with pytest.raises(SiteUnavailable, match="accounting storage is disabled"):
        dialect().parse_accounting(result("slurm", "real_sacct_disabled.txt"))


# -- find, cancel, queues -------------------------------------------------------------


def test_find_by_tag_looks_in_the_queue_then_in_accounting() -> None:
    d = dialect()
    first, second = d.find_commands(TAG)
    assert first[-3:] == ("--states=all", f"--name={TAG}", "--format=%i|%T|%r|%S|%j")
    assert f"--name={TAG}" in second and "--starttime=now-7days" in second
    assert d.parse_find(result("slurm", "squeue_empty.txt"), TAG) is None
    assert d.parse_find(result("slurm", "squeue_by_name.txt"), TAG) == "7"
    real_tag = "gw-5e1f0000-0000-4000-8000-000000000003"
    assert d.parse_find(result("slurm", "real_squeue_by_name.txt"), real_tag) == "8"
    assert d.parse_find(result("slurm", "sacct_by_name.txt"), TAG) == "7"
    assert d.parse_find(result("slurm", "sacct_by_name.txt"), "gw-other") is None


def test_cancel() -> None:
    d = dialect()
    assert d.cancel_command("7") == ("scancel", "7")
    d.parse_cancel(result("slurm", "real_scancel.txt"), "9")
    d.parse_cancel(result("slurm", "real_scancel_unknown.txt"), "9999")  # silent, exit 0
    with pytest.raises(UnknownJob):
        d.cancel_command("7; rm -rf /")


def test_sinfo_partitions_limits_and_load() -> None:
    queues = {q.name: q for q in dialect().parse_queues(result("slurm", "sinfo.txt"))}
    assert set(queues) == {"debug", "long", "maint"}
    debug = queues["debug"]
    assert (debug.default, debug.available, debug.max_walltime, debug.max_nodes) == (
        True, True, 3600, None)
    assert (debug.cpus_idle, debug.cpus_total, debug.memory_mb_per_node) == (2, 2, 1000)
    long = queues["long"]  # two lines of unlike nodes, added up
    assert (long.max_walltime, long.max_nodes) == (7 * 86400, 2)
    assert (long.nodes_total, long.nodes_idle, long.cpus_total, long.cpus_idle) == (2, 1, 6, 4)
    assert (long.cpus_per_node, long.memory_mb_per_node, long.scratch_mb_per_node) == (
        4, 4000, 100000)
    assert debug.scratch_mb_per_node == 0  # Slurm's default TmpDisk
    assert queues["maint"].available is False and queues["maint"].max_walltime is None
    debug, batch = dialect().parse_queues(result("slurm", "real_sinfo.txt"))
    assert (debug.name, debug.default, debug.max_walltime, debug.max_nodes) == (
        "debug", True, 1800, 1)
    assert (batch.name, batch.default, batch.max_walltime, batch.nodes_total) == (
        "batch", False, 7 * 86400, 1)
    assert (batch.cpus_idle, batch.cpus_total, batch.cpus_per_node) == (2, 2, 2)
    assert (batch.memory_mb_per_node, batch.scratch_mb_per_node) == (512, 2048)


def test_sacctmgr_lists_the_qualities_of_service() -> None:
    d = dialect()
    assert d.qos_command() == ("sacctmgr", "--noheader", "--parsable2", "show", "qos",
                               "format=Name")
    assert d.parse_qos(result("slurm", "real_sacctmgr_qos.txt")) == ["normal", "long"]
    with pytest.raises(SiteUnavailable, match="Problem talking to the database"):
        d.parse_qos(CommandResult(d.qos_command(), 1, b"",
                                  b"sacctmgr: error: Problem talking to the database\n"))
