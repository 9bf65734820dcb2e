"""Queue snapshots of Slurm and Grid Engine, parsed from REAL outputs.

Every fixture here was recorded from the gridgate testbed (roadrunner and parnass2:
slurm-wlm 22.05.8; galaxy: Son of Grid Engine 8.1.9) over SSH, running the dialects' own
argv; each file's header gives the command and the jobs that were in the queue. The same
commands run live in tests/live/test_queue_snapshots.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.batch.adapter import BatchAdapter
from adapters.errors import AdapterError, SiteUnavailable
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.snapshot import JobPhase, QueueInfo, SnapshotJob
from adapters.testing import Recording
from tests.schedulers.recorded import ReplayTransport, load, result

NOW = datetime(2026, 11, 24, 22, 22, tzinfo=UTC)


def _at(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def test_slurm_commands_are_fixed_and_list_every_user() -> None:
    d = SlurmDialect()
    assert d.queue_jobs_command() == (
        "env", "SLURM_TIME_FORMAT=%s", "squeue", "--all", "--array", "--noheader",
        "--format=%i|%T|%P|%C|%D|%l|%V|%S|%u|%r|%j")
    assert d.cores_command() == (
        "sinfo", "--Node", "--noheader", "--format=%N|%P|%a|%l|%s|%C|%c|%m|%T")
    assert load("slurm", "real_squeue_snapshot.txt").source.startswith("Recorded from")


def test_slurm_jobs_of_all_users_with_sizes_limits_and_backfill_estimates() -> None:
    jobs = {j.native_id: j for j in SlurmDialect().parse_queue_jobs(
        result("slurm", "real_squeue_snapshot.txt"))}
    assert jobs["1"] == SnapshotJob(
        native_id="1", phase=JobPhase.RUNNING, raw_state="RUNNING", cores=2, nodes=1,
        time_limit_seconds=1200, submitted_at=_at(1795558710), started_at=_at(1795558711),
        estimated_start=None, queue="debug", user="gwalice", name="alice-big")
    # Pending: the backfill scheduler's planned start (squeue --start's START_TIME).
    assert jobs["2"].phase is JobPhase.PENDING and jobs["2"].started_at is None
    assert jobs["2"].estimated_start == _at(1795559911)
    assert (jobs["2"].cores, jobs["2"].time_limit_seconds) == (1, 600)
    # 2 starts when 1 reaches its time limit (started 1795558711 + 1200 s).
    assert jobs["2"].estimated_start == _at(1795558711 + 1200)
    assert (jobs["3"].queue, jobs["3"].cores, jobs["3"].time_limit_seconds) == (
        "batch", 2, 86400)
    assert jobs["3"].estimated_start == _at(1795560480) and jobs["3"].user == "gwbob"
    # Not planned yet: no estimate. A `|` in the name does not shift the fields.
    assert jobs["4"].estimated_start is None and jobs["4"].name == "bob|odd name"
    assert jobs["4"].time_limit_seconds == 1800
    assert {j.user for j in jobs.values()} == {"gwalice", "gwbob"}


def test_slurm_cores_count_a_node_once_and_per_partition() -> None:
    cores = SlurmDialect().parse_cores(result("slurm", "real_sinfo_nodes.txt"))
    # One 2-CPU node in two partitions: the site has 2 CPUs, none free.
    assert (cores.total, cores.free) == (2, 0)
    assert cores.queues == (
        QueueInfo("debug", default=True, available=True, state="up", max_walltime=1800,
                  max_nodes=1, nodes_total=1, nodes_idle=0, cpus_total=2, cpus_idle=0,
                  cpus_per_node=2, memory_mb_per_node=512),
        QueueInfo("batch", default=False, available=True, state="up",
                  max_walltime=7 * 86400, max_nodes=1, nodes_total=1, nodes_idle=0,
                  cpus_total=2, cpus_idle=0, cpus_per_node=2, memory_mb_per_node=512))
    idle = SlurmDialect().parse_cores(result("slurm", "real_sinfo_nodes_idle.txt"))
    assert (idle.total, idle.free) == (2, 2)
    assert [(q.name, q.nodes_idle, q.cpus_idle) for q in idle.queues] == [
        ("short", 1, 2), ("long", 1, 2)]


def test_the_adapter_takes_a_slurm_snapshot_in_two_commands() -> None:
    d = SlurmDialect()
    t = ReplayTransport()
    t.expect(d.queue_jobs_command(), load("slurm", "real_squeue_snapshot.txt"))
    t.expect(d.cores_command(), load("slurm", "real_sinfo_nodes.txt"))
    snap = BatchAdapter(t, d, clock=lambda: NOW).queue_snapshot()
    t.assert_done()
    assert snap.taken_at == NOW and (snap.total_cores, snap.free_cores) == (2, 0)
    assert [j.native_id for j in snap.running] == ["1"]
    assert [j.native_id for j in snap.pending] == ["3", "2", "4"]
    assert snap.queue("batch") is not None and snap.queue("nosuch") is None
    with pytest.raises(AttributeError):
        snap.jobs = ()  # type: ignore[misc]


def test_an_idle_slurm_site() -> None:
    d = SlurmDialect()
    t = ReplayTransport()
    t.expect(d.queue_jobs_command(), load("slurm", "real_squeue_snapshot_empty.txt"))
    t.expect(d.cores_command(), load("slurm", "real_sinfo_nodes_idle.txt"))
    snap = BatchAdapter(t, d, clock=lambda: NOW).queue_snapshot()
    assert snap.jobs == () and (snap.total_cores, snap.free_cores) == (2, 2)


def test_sge_command_lists_every_user_with_requests_and_array_tasks() -> None:
    assert SgeDialect().queue_jobs_command() == ("qstat", "-xml", "-r", "-g", "d", "-u", "*")
    assert SgeDialect().cores_command() == ("qstat", "-g", "c")


def test_sge_jobs_of_all_users_with_slots_and_h_rt() -> None:
    jobs = {j.native_id: j for j in SgeDialect().parse_queue_jobs(
        result("sge", "real_qstat_snapshot.txt"))}
    assert list(jobs) == ["1", "3", "2", "4", "5.1", "5.2", "5.3"]
    assert jobs["1"] == SnapshotJob(
        native_id="1", phase=JobPhase.RUNNING, raw_state="r", cores=2, time_limit_seconds=1200,
        started_at=datetime(2026, 11, 24, 22, 19, 24, tzinfo=UTC), queue="all.q",
        user="gwalice", name="alice-big")
    assert (jobs["3"].phase, jobs["3"].cores, jobs["3"].time_limit_seconds) == (
        JobPhase.PENDING, 2, 86400)
    assert jobs["3"].submitted_at == datetime(2026, 11, 24, 22, 19, 25, tzinfo=UTC)
    # No h_rt request: the queue's limit applies, which qstat does not print.
    assert jobs["4"].time_limit_seconds is None and jobs["4"].user == "gwbob"
    # Grid Engine makes no start estimate.
    assert all(j.estimated_start is None for j in jobs.values())
    assert {jobs[f"5.{n}"].time_limit_seconds for n in (1, 2, 3)} == {300}


def test_sge_cores_from_the_cluster_queue_summary() -> None:
    cores = SgeDialect().parse_cores(result("sge", "real_qstat_gc_full.txt"))
    assert (cores.total, cores.free) == (2, 0)
    assert [(q.name, q.cpus_total, q.cpus_idle) for q in cores.queues] == [("all.q", 2, 0)]
    idle = SgeDialect().parse_cores(result("sge", "real_qstat_gc.txt"))
    assert idle.total == sum(q.cpus_total or 0 for q in idle.queues)


GARBAGE = [
    Recording(0, b"<html>proxy error</html>\n", b"", "not squeue"),
    Recording(0, b"1|RUNNING|debug\n", b"", "too few fields"),
    Recording(0, b"x1|RUNNING|debug|2|1|20:00|1|1|u|None|name\n", b"", "not a job id"),
]


@pytest.mark.parametrize("answer", GARBAGE, ids=lambda r: r.source)
def test_slurm_garbage_is_refused_clearly(answer: Recording) -> None:
    with pytest.raises(SiteUnavailable, match="squeue printed a line not of the asked format"):
        SlurmDialect().parse_queue_jobs(answer.result(("squeue",)))


def test_slurm_failures_and_odd_fields() -> None:
    with pytest.raises(SiteUnavailable, match="sinfo printed a line"):
        SlurmDialect().parse_cores(Recording(0, b"n1|debug|up|1:00|1|2/0|2|5|idle\n", b"")
                                   .result(("sinfo",)))
    down = Recording(1, b"", b"slurm_load_jobs error: Unable to contact slurm controller\n")
    with pytest.raises(SiteUnavailable, match="Unable to contact slurm controller"):
        SlurmDialect().parse_queue_jobs(down.result(("squeue",)))
    # Missing values never crash: they are unknown.
    odd = Recording(0, b"9|PENDING||N/A|N/A|UNLIMITED|N/A|N/A|||\n", b"")
    (job,) = SlurmDialect().parse_queue_jobs(odd.result(("squeue",)))
    assert job == SnapshotJob("9", JobPhase.PENDING, "PENDING", name="")
    # Ended or unknown states are not part of the queue.
    over = Recording(0, b"9|COMPLETED|debug|1|1|1:00|1|1|u|None|n\n"
                        b"10|WEIRD|debug|1|1|1:00|1|1|u|None|n\n", b"")
    assert SlurmDialect().parse_queue_jobs(over.result(("squeue",))) == []


@pytest.mark.parametrize("stdout", [b"not xml at all", b"<unknown_jobs/>",
                                    b"<job_info><job_list><JB_job_number>x</JB_job_number>"
                                    b"</job_list></job_info>"])
def test_sge_garbage_is_refused_clearly(stdout: bytes) -> None:
    with pytest.raises(AdapterError, match="qstat -xml"):
        SgeDialect().parse_queue_jobs(Recording(0, stdout, b"").result(("qstat",)))


def test_sge_job_with_missing_fields_is_kept_with_unknowns() -> None:
    bare = (b"<job_info><job_info><job_list state='pending'><JB_job_number>7</JB_job_number>"
            b"<state>qw</state></job_list><job_list><JB_job_number>8</JB_job_number>"
            b"</job_list></job_info></job_info>")
    jobs = SgeDialect().parse_queue_jobs(Recording(0, bare, b"").result(("qstat",)))
    assert jobs == [SnapshotJob("7", JobPhase.PENDING, "qw")]
