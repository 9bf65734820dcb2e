"""TORQUE through the PBS dialect (`pbs_server: torque`), where it differs from PBS Pro.

TORQUE cannot be installed on this machine, so these fixtures (fixtures/pbs/torque_*) are
recorded formats, not outputs of a live system: `qstat -f -x` XML and `qstat -Q -f` text as
TORQUE's src/cmds/qstat.c prints them, error texts as recorded in public tooling that
drives TORQUE. Each file's header cites its source. What TORQUE shares with PBS (qsub's
answer, the accounting log, Exit_status values) is tested in test_pbs.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters import registry
from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.batch.entry import DialectSettings
from adapters.batch.types import DialectConfig, JobLayout
from adapters.errors import SiteUnavailable, UnknownJob
from adapters.pbs import PbsDialect, torque
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-2222-4c1a-9a3e-000000000003"
WORKDIR = f"/scratch/gw/{TAG}"
IDS = [f"{n}.torquesrv" for n in (201, 202, 203, 204)]


def dialect() -> PbsDialect:
    built = registry.dialect("pbs", DialectSettings(
        DialectConfig(default_queue="batch"), options={"pbs_server": "torque"}))
    assert isinstance(built, PbsDialect)
    return built


def test_qsub_asks_nodes_and_ppn_and_keeps_no_files() -> None:
    request = SubmitRequest(tag=TAG, workdir=WORKDIR, argv=["./a.out"],
                            resources=Resources(nodes=2, ranks=8, threads_per_rank=2,
                                                memory_mb=4096, walltime_seconds=5400),
                            mpi=MpiRequest("mpirun"))
    command = dialect().submit_command(request, JobLayout.of(WORKDIR))
    # 4 ranks x 2 threads on each of 2 nodes; mem is the whole job's (2 x 4096 MB).
    assert command.argv == (
        "qsub", "-N", TAG, "-o", f"{WORKDIR}/stdout", "-e", f"{WORKDIR}/stderr", "-j", "n",
        "-S", "/bin/sh", "-l", "walltime=1:30:00", "-l", "nodes=2:ppn=8", "-l", "mem=8192mb",
        "-q", "batch")
    script = (command.stdin or b"").decode().splitlines()
    assert "#PBS -l nodes=2:ppn=8" in script
    assert not any("select=" in line or "place=" in line for line in script)


def test_qstat_xml_states_and_exit_statuses() -> None:
    d = dialect()
    assert d.status_command(IDS) == ("qstat", "-f", "-x", *IDS)
    found = d.parse_status(result("pbs", "torque_qstat_jobs.txt"), IDS)
    assert set(found) == set(IDS)
    done = found["201.torquesrv"]
    assert (done.state, done.exit_code, done.raw_state) == (
        NativeState.COMPLETED, 0, "C (exit_status 0)")
    assert (done.started_at, done.ended_at) == (datetime.fromtimestamp(1763777702, UTC),
                                                datetime.fromtimestamp(1763777710, UTC))
    killed = found["202.torquesrv"]
    assert (killed.state, killed.exit_code, killed.reason) == (
        NativeState.FAILED, 143, "killed by signal 15")
    assert found["203.torquesrv"].state is NativeState.RUNNING
    queued = found["204.torquesrv"]
    assert (queued.state, queued.reason) == (NativeState.QUEUED,
                                             "Not Running: Insufficient resources")
    # A longer server name than the one asked for still matches by sequence number.
    assert set(d.parse_status(result("pbs", "torque_qstat_jobs.txt"), ["203.torquesrv.lan"])) \
        == {"203.torquesrv.lan"}


def test_unknown_ids_are_left_out_and_a_down_server_is_transient() -> None:
    d = dialect()
    assert d.parse_status(result("pbs", "torque_qstat_unknown.txt"), ["299.torquesrv"]) == {}
    with pytest.raises(SiteUnavailable):
        d.parse_status(result("pbs", "qstat_server_down.txt"), ["203.torquesrv"])


def test_find_without_history_flag_and_cancel_of_a_completed_job() -> None:
    d = dialect()
    assert d.find_commands(TAG) == [("qselect", "-N", TAG)]
    assert d.parse_find(result("pbs", "torque_qselect_by_name.txt"), TAG) == "203.torquesrv"
    d.parse_cancel(result("pbs", "torque_qdel_completed.txt"), "201.torquesrv")
    with pytest.raises(UnknownJob):
        d.parse_cancel(result("pbs", "qdel_unknown.txt"), "299.torquesrv")


def test_queues_from_the_text_listing() -> None:
    d = dialect()
    assert d.queues_command() == ("qstat", "-Q", "-f")
    [batch] = d.parse_queues(result("pbs", "torque_qstat_queues.txt"))  # route runs no jobs
    assert (batch.name, batch.default, batch.available) == ("batch", True, True)
    assert (batch.max_walltime, batch.max_nodes) == (86400, 4)
    assert (batch.jobs_running, batch.jobs_pending) == (2, 1)
    # prt_attr continues state_count on the next line after a tab: read whole.
    listing = torque.queue_attributes(result("pbs", "torque_qstat_queues.txt"))
    assert listing["batch"]["state_count"] == (
        "Transit:0 Queued:1 Held:0 Waiting:0 Running:2 Exiting:0 Complete:0")
    assert listing["route"]["route_destinations"] == "batch"
