"""Queue snapshots of PBS Professional, TORQUE and LSF, on outputs DERIVED FROM DOCUMENTATION.

These schedulers cannot be installed on this machine, so their fixtures are not outputs
of a live system: each file's header names the man page, documentation page or public
source its format comes from (OpenPBS qstat.1B, pbsnodes.8B and pbs_job_attributes.7B;
TORQUE src/cmds/qstat.c and pbsnodes.c; the IBM Spectrum LSF 10.1 command reference for
bjobs -o/-json and bhosts, lsf.conf(5) for the estimator's field).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from adapters.batch.adapter import BatchAdapter
from adapters.errors import AdapterError, SiteUnavailable
from adapters.lsf import LsfDialect
from adapters.lsf.snapshot import FIELDS
from adapters.pbs import PbsDialect
from adapters.pbs.torque_snapshot import job_cores
from adapters.snapshot import JobPhase, QueueInfo, SnapshotJob
from adapters.testing import Recording
from tests.schedulers.recorded import ReplayTransport, load, result

NOW = datetime(2025, 11, 22, 3, 0, tzinfo=UTC)
TORQUE = PbsDialect(torque=True)


def _pbs(hour: int, minute: int) -> datetime:
    return datetime(2025, 11, 22, hour, minute, tzinfo=UTC)


def test_pbs_commands() -> None:
    assert PbsDialect().queue_jobs_command() == ("qstat", "-f", "-F", "json", "-t")
    assert PbsDialect().cores_command() == ("pbsnodes", "-a", "-F", "json")
    assert "Derived, not from a live system" in load("pbs", "qstat_snapshot.txt").source


def test_pbs_jobs_of_all_users_with_the_schedulers_estimate() -> None:
    jobs = {j.native_id: j for j in PbsDialect().parse_queue_jobs(
        result("pbs", "qstat_snapshot.txt"))}
    # The array's parent is left out: its subjobs are listed themselves.
    assert list(jobs) == ["201.pbsserver", "202.pbsserver", "203.pbsserver",
                          "204[1].pbsserver", "204[2].pbsserver", "205.pbsserver"]
    assert jobs["201.pbsserver"] == SnapshotJob(
        native_id="201.pbsserver", phase=JobPhase.RUNNING, raw_state="R", cores=4, nodes=1,
        time_limit_seconds=7200, submitted_at=_pbs(2, 10), started_at=_pbs(2, 15),
        queue="workq", user="gwcomm", name="gw-0b7e4c1a-1111-4c1a-9a3e-000000000201")
    queued = jobs["202.pbsserver"]
    assert (queued.phase, queued.cores, queued.nodes, queued.time_limit_seconds) == (
        JobPhase.PENDING, 16, 2, 14400)
    assert queued.estimated_start == _pbs(4, 15) and queued.user == "alice"
    # A held job with almost nothing said about it: unknowns, no crash.
    assert jobs["203.pbsserver"] == SnapshotJob(
        "203.pbsserver", JobPhase.PENDING, "H", cores=1, queue="workq", user="bob")
    assert jobs["204[2].pbsserver"].phase is JobPhase.PENDING
    # Exiting still holds its cores.
    assert jobs["205.pbsserver"].phase is JobPhase.RUNNING


def test_pbs_cores_from_the_nodes() -> None:
    cores = PbsDialect().parse_cores(result("pbs", "pbsnodes_snapshot.txt"))
    # 8 + 8 + 8 + 4 ncpus; free: node1 4, node2 none (busy), node3 none (down), gpu1 2.
    assert (cores.total, cores.free) == (28, 6)
    assert cores.queues == (QueueInfo("gpuq", cpus_total=4, cpus_idle=2),)


def test_the_adapter_takes_a_pbs_snapshot() -> None:
    d = PbsDialect()
    t = ReplayTransport()
    t.expect(d.queue_jobs_command(), load("pbs", "qstat_snapshot_empty.txt"))
    t.expect(d.cores_command(), load("pbs", "pbsnodes_snapshot.txt"))
    snap = BatchAdapter(t, d, clock=lambda: NOW).queue_snapshot()
    t.assert_done()
    assert (snap.taken_at, snap.jobs, snap.total_cores, snap.free_cores) == (NOW, (), 28, 6)


@pytest.mark.parametrize("stdout", [b"{not json", b"[1, 2]", b'{"Jobs": 3}',
                                    b'{"pbs_server": "s", "Jobs": {"1.s": "R"}}',
                                    b'{"pbs_server": "s", "Jobs": {"1 rm -rf": {}}}'])
def test_pbs_garbage_is_refused_clearly(stdout: bytes) -> None:
    with pytest.raises(SiteUnavailable, match=r"qstat|PBS"):
        PbsDialect().parse_queue_jobs(Recording(0, stdout, b"").result(("qstat",)))


def test_pbs_nodes_without_cores_are_refused() -> None:
    bad = b'{"pbs_server": "s", "nodes": {"n1": {"state": "free"}}}'
    with pytest.raises(SiteUnavailable, match=r"no resources_available\.ncpus"):
        PbsDialect().parse_cores(Recording(0, bad, b"").result(("pbsnodes",)))
    down = Recording(1, b"", b"pbsnodes: cannot connect to server pbsserver\n")
    with pytest.raises(SiteUnavailable, match="cannot connect"):
        PbsDialect().parse_cores(down.result(("pbsnodes",)))


def test_torque_commands_jobs_and_cores() -> None:
    assert TORQUE.queue_jobs_command() == ("qstat", "-f", "-x")
    assert TORQUE.cores_command() == ("pbsnodes", "-x")
    jobs = {j.native_id: j for j in TORQUE.parse_queue_jobs(
        result("pbs", "torque_qstat_snapshot.txt"))}
    # Completed jobs (state C) are not in the queue.
    assert list(jobs) == ["301.torquesrv", "302.torquesrv", "304.torquesrv"]
    assert jobs["301.torquesrv"] == SnapshotJob(
        native_id="301.torquesrv", phase=JobPhase.RUNNING, raw_state="R", cores=2, nodes=1,
        time_limit_seconds=3600, submitted_at=datetime.fromtimestamp(1763777700, UTC),
        started_at=datetime.fromtimestamp(1763777702, UTC), queue="batch", user="alice",
        name="job301")
    assert (jobs["302.torquesrv"].cores, jobs["302.torquesrv"].estimated_start) == (8, None)
    assert (jobs["304.torquesrv"].cores, jobs["304.torquesrv"].time_limit_seconds) == (4, None)
    cores = TORQUE.parse_cores(result("pbs", "torque_pbsnodes.txt"))
    # np 4 + 4 + 2; free: node1 2 of 4 (cores 0-1 busy), node2 down, node3 full.
    assert (cores.total, cores.free) == (10, 2)


@pytest.mark.parametrize(("spec", "cores"), [
    ("1", 1), ("2:ppn=4", 8), ("n1:ppn=2+n2:ppn=2", 4), ("2:ppn=4:gpus=1", 8), ("n1", 1),
    ("", None), ("2:ppn=x", None)])
def test_torque_node_specs(spec: str, cores: int | None) -> None:
    assert job_cores(spec) == cores


def test_torque_garbage_is_refused_clearly() -> None:
    with pytest.raises(SiteUnavailable, match="pbsnodes -x"):
        TORQUE.parse_cores(Recording(0, b"<html/>", b"").result(("pbsnodes",)))
    with pytest.raises(SiteUnavailable, match="qstat -x"):
        TORQUE.parse_queue_jobs(Recording(0, b"<Data><Job", b"").result(("qstat",)))


def _lsf(hour: int, minute: int) -> datetime:
    return datetime(2025, 11, 22, hour, minute, tzinfo=UTC)


def test_lsf_commands() -> None:
    d = LsfDialect(clock=lambda: NOW)
    assert d.queue_jobs_command() == ("bjobs", "-u", "all", "-json", "-o", FIELDS)
    assert "estimated_sim_start_time" in FIELDS.split()
    assert d.cores_command() == ("bhosts", "-w")


def test_lsf_jobs_of_all_users_with_the_estimators_start() -> None:
    d = LsfDialect(clock=lambda: NOW)
    jobs = {j.native_id: j for j in d.parse_queue_jobs(result("lsf", "bjobs_snapshot.txt"))}
    assert list(jobs) == ["3001", "3002", "3003", "3004[2]", "3005"]
    assert jobs["3001"] == SnapshotJob(
        native_id="3001", phase=JobPhase.RUNNING, raw_state="RUN", cores=4,
        time_limit_seconds=7200, submitted_at=_lsf(2, 10), started_at=_lsf(2, 15),
        queue="normal", user="gwcomm", name="gw-0b7e4c1a-1111-4c1a-9a3e-000000003001")
    assert (jobs["3002"].cores, jobs["3002"].time_limit_seconds) == (8, 3600)
    assert jobs["3002"].estimated_start == _lsf(4, 15)
    assert (jobs["3003"].time_limit_seconds, jobs["3003"].estimated_start) == (None, None)
    assert jobs["3004[2]"].phase is JobPhase.PENDING
    assert jobs["3005"].phase is JobPhase.RUNNING and jobs["3005"].cores == 2


def test_lsf_estimates_without_a_year_lie_ahead() -> None:
    """bjobs prints no year: an estimate of "Jan 02" seen on Dec 31 is next year's."""
    late = datetime(2025, 12, 31, 23, 0, tzinfo=UTC)
    body = (b'{"RECORDS": [{"JOBID": "1", "STAT": "PEND", "SUBMIT_TIME": "Dec 31 22:00",'
            b' "ESTIMATED_SIM_START_TIME": "Jan 02 10:00"}]}')
    (job,) = LsfDialect(clock=lambda: late).parse_queue_jobs(
        Recording(0, body, b"").result(("bjobs",)))
    assert job.submitted_at == datetime(2025, 12, 31, 22, 0, tzinfo=UTC)
    assert job.estimated_start == datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
    assert job.estimated_start - late < timedelta(days=2)


def test_lsf_no_jobs_and_slots() -> None:
    d = LsfDialect(clock=lambda: NOW)
    assert d.parse_queue_jobs(result("lsf", "bjobs_snapshot_none.txt")) == []
    cores = d.parse_cores(result("lsf", "bhosts.txt"))
    # 8 + 4 + 8 slots; free only on the `ok` host: 8 - 4.
    assert (cores.total, cores.free) == (20, 4)


def test_the_adapter_takes_an_lsf_snapshot() -> None:
    d = LsfDialect(clock=lambda: NOW)
    t = ReplayTransport()
    t.expect(d.queue_jobs_command(), load("lsf", "bjobs_snapshot.txt"))
    t.expect(d.cores_command(), load("lsf", "bhosts.txt"))
    snap = BatchAdapter(t, d, clock=lambda: NOW).queue_snapshot()
    t.assert_done()
    assert len(snap.pending) == 3 and len(snap.running) == 2 and snap.free_cores == 4


@pytest.mark.parametrize("answer", [
    Recording(0, b"Job <1> is not found\n", b""),
    Recording(0, b'{"RECORDS": [{"JOBID": "1; rm", "STAT": "RUN"}]}', b""),
    Recording(255, b"", b"LSF is down. Please wait ...\n"),
])
def test_lsf_garbage_is_refused_clearly(answer: Recording) -> None:
    with pytest.raises(AdapterError):
        LsfDialect(clock=lambda: NOW).parse_queue_jobs(answer.result(("bjobs",)))


@pytest.mark.parametrize("stdout", [b"", b"hostA ok - 8 4\n",
                                    b"HOST_NAME STATUS JL/U MAX NJOBS\nhostA ok\n"])
def test_lsf_host_table_garbage_is_refused(stdout: bytes) -> None:
    with pytest.raises(SiteUnavailable, match="bhosts -w"):
        LsfDialect().parse_cores(Recording(0, stdout, b"").result(("bhosts",)))
