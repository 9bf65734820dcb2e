"""`BatchAdapter` flows (submit -> status -> accounting, cancels, lookups by tag, output)
over a replaying transport.

`ReplayTransport` (tests/schedulers/recorded.py) is a fake Transport: it checks each argv
the adapter runs and answers with recorded outputs from fixtures/ (whose headers cite
their sources), so these tests run without sockets. The real schedulers behind real sshd
are exercised by the live testbed tests; here the point is the adapter's own logic: what
it asks, in which order, and what it concludes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.base import Adapter, NativeState, Resources, SubmitRequest
from adapters.batch.adapter import VANISHED_AFTER_CANCEL, BatchAdapter
from adapters.batch.bulk_submit import parse_batch
from adapters.batch.types import JobLayout
from adapters.errors import AdapterError, SiteUnavailable, SubmitRejected
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.slurm.commands import SlurmCommands
from adapters.transport import CommandTimeout, LocalTransport
from tests.schedulers.recorded import OK, Recording, ReplayTransport, load

PREFIX = "gw-0b7e4c1a-1111-4c1a-9a3e-0000000000"
TAG = f"{PREFIX}07"
WORKDIR = f"/scratch/gw/{TAG}"
LAYOUT = JobLayout.of(WORKDIR)
MKDIR = ("mkdir", "-p", "-m", "700", "--", WORKDIR, f"{WORKDIR}/.gridgate")
SCRIPT = "#!/bin/sh\n#SBATCH --mail-type=END\necho hello\n"
ONE_TRIP = ("sh", "-c", 'mkdir -p -m 700 -- "$1" "$2" || exit 97; shift 2; exec "$@"',
            "gridgate-submit")


def request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {"tag": TAG, "workdir": WORKDIR, "script": SCRIPT,
                               "resources": Resources(walltime_seconds=120)}
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


def slurm(t: ReplayTransport, **kwargs: object) -> BatchAdapter:
    return BatchAdapter(t, SlurmDialect(), **kwargs)  # type: ignore[arg-type]


def squeue(*ids: str) -> tuple[str, ...]:
    return SlurmDialect().status_command(list(ids))


def sacct(*ids: str) -> tuple[str, ...]:
    return SlurmDialect().accounting_commands(list(ids))[0]


def test_it_is_an_adapter() -> None:
    adapter: Adapter = slurm(ReplayTransport())
    assert adapter.kind == "slurm"


def test_slurm_submit_then_status_then_accounting() -> None:
    t = ReplayTransport()
    adapter = slurm(t, submit_timeout=33.0)
    submit = SlurmDialect().submit_command(request(), LAYOUT)
    t.expect(MKDIR).expect(submit.argv, load("slurm", "sbatch_parsable.txt"))
    assert adapter.submit(request()) == "7"
    # The user's script is stored for the batch script to run; the batch script is stdin.
    assert t.files[f"{WORKDIR}/.gridgate/script"] == (SCRIPT.encode(), 0o700)
    sbatch = t.calls[-1]
    assert sbatch.stdin == adapter.render_script(request()).encode()
    assert sbatch.timeout == 33.0

    t.expect(squeue("7"), load("slurm", "squeue_active.txt"))
    running = adapter.status(["7"])["7"]
    assert running.state is NativeState.RUNNING

    # Gone from the queue: accounting, not absence, says how it ended.
    t.expect(squeue("7"), load("slurm", "real_squeue_invalid_id.txt"))
    t.expect(sacct("7"), load("slurm", "sacct_finished.txt"))
    done = adapter.status(["7"])["7"]
    assert (done.state, done.exit_code) == (NativeState.COMPLETED, 0)
    assert done.ended_at == datetime(2025, 11, 22, 2, 16, 10, tzinfo=UTC)
    t.assert_done()


def test_many_ids_one_queue_query_and_accounting_only_for_the_unsettled() -> None:
    t = ReplayTransport()
    adapter = slurm(t)
    ids = ["7", "8", "9", "10", "11"]
    t.expect(squeue(*ids), load("slurm", "squeue_active.txt"))
    # 10 is CANCELLED in squeue (final: ask sacct), 11 is not listed (ask sacct).
    t.expect(sacct("10", "11"), load("slurm", "sacct_finished.txt"))
    found = adapter.status([*ids, "7"])
    t.assert_done()
    assert list(found) == ["7", "8", "9", "11"]
    assert found["11"].state is NativeState.FAILED and found["11"].exit_code == 3
    # sacct has no record of 10 yet: no news of it until there is one (its exit code).
    assert "10" not in found
    assert found["9"].state is NativeState.RUNNING


def test_a_finished_job_waits_for_its_record_then_the_queue_word_stands(
        caplog: pytest.LogCaptureFixture) -> None:
    # The CI flake this guards against: squeue showed `exit 3` FAILED a moment before
    # slurmdbd had the record, and the job ended FAILED with no exit code.
    now = [100.0]
    t = ReplayTransport()
    adapter = slurm(t, record_grace=30.0, monotonic=lambda: now[0])
    queue_failed = Recording(0, b"5|FAILED|NonZeroExitCode|1763777770|exit 3\n", b"")
    t.expect(squeue("5"), queue_failed).expect(sacct("5"), OK)
    assert adapter.status(["5"]) == {}
    now[0] += 29
    t.expect(squeue("5"), queue_failed).expect(sacct("5"), OK)
    assert adapter.status(["5"]) == {}
    now[0] += 2
    t.expect(squeue("5"), queue_failed).expect(sacct("5"), OK)
    with caplog.at_level("WARNING", logger="adapters.batch.adapter"):
        late = adapter.status(["5"])["5"]
    assert (late.state, late.exit_code) == (NativeState.FAILED, None)
    assert "no accounting record 31 s after" in caplog.text
    t.assert_done()
    assert adapter._awaiting_record == {}


def test_the_record_settles_a_job_the_queue_showed_finished() -> None:
    now = [0.0]
    t = ReplayTransport()
    adapter = slurm(t, monotonic=lambda: now[0])
    queue_failed = Recording(0, b"11|FAILED|NonZeroExitCode|1763777770|x\n", b"")
    t.expect(squeue("11"), queue_failed).expect(sacct("11"), OK)
    assert adapter.status(["11"]) == {}
    # Seen on the testbed: the record exists, but still says PENDING.
    pending = Recording(0, b"11|PENDING|0:0|Unknown|Unknown|None|x\n", b"")
    t.expect(squeue("11"), queue_failed).expect(sacct("11"), pending)
    assert adapter.status(["11"]) == {}
    now[0] += 1
    t.expect(squeue("11"), queue_failed).expect(sacct("11"), load("slurm", "sacct_finished.txt"))
    done = adapter.status(["11"])["11"]
    assert (done.state, done.exit_code) == (NativeState.FAILED, 3)
    assert adapter._awaiting_record == {}


def test_without_accounting_the_queue_still_answers(caplog: pytest.LogCaptureFixture) -> None:
    ids = ["6", "7", "8", "9", "10"]
    t = ReplayTransport().expect(squeue(*ids), load("slurm", "real_squeue_states.txt"))
    t.expect(sacct("7", "8", "9"), load("slurm", "real_sacct_disabled.txt"))
    with caplog.at_level("WARNING", logger="adapters.batch.adapter"):
        found = slurm(t).status(ids)
    assert found["6"].state is NativeState.RUNNING and found["10"].state is NativeState.QUEUED
    assert found["8"].state is NativeState.COMPLETED  # squeue's word until sacct answers
    assert "accounting storage is disabled" in caplog.text


def test_completion_is_never_inferred_from_absence() -> None:
    t = ReplayTransport()
    t.expect(squeue("99"), load("slurm", "real_squeue_invalid_id.txt"))
    t.expect(sacct("99"), OK)
    assert slurm(t).status(["99"]) == {}
    t.assert_done()


def test_unknown_state_reaches_the_gateway_as_unknown() -> None:
    t = ReplayTransport().expect(squeue("7"), load("slurm", "squeue_unknown_state.txt"))
    status = slurm(t).status(["7"])["7"]
    assert (status.state, status.raw_state) == (NativeState.UNKNOWN, "POWERED_DOWN_SOMEHOW")


def test_find_by_tag_queue_first_then_accounting() -> None:
    d = SlurmDialect()
    by_queue, by_accounting = d.find_commands(TAG)
    t = ReplayTransport().expect(by_queue, load("slurm", "squeue_empty.txt"))
    t.expect(by_accounting, load("slurm", "sacct_by_name.txt"))
    assert slurm(t).find_by_tag(TAG, WORKDIR) == "7"
    t.assert_done()
    t = ReplayTransport().expect(by_queue, load("slurm", "squeue_by_name.txt"))
    assert slurm(t).find_by_tag(TAG, WORKDIR) == "7"
    t.assert_done()
    t = ReplayTransport().expect(by_queue, OK).expect(by_accounting, OK)
    assert slurm(t).find_by_tag(TAG, WORKDIR) is None


def test_submit_failures() -> None:
    submit = SlurmDialect().submit_command(request(), LAYOUT)
    t = ReplayTransport().expect(MKDIR).expect(submit.argv,
                                               load("slurm", "real_sbatch_invalid_partition.txt"))
    with pytest.raises(SubmitRejected, match="Invalid partition name specified"):
        slurm(t).submit(request())
    # A lost answer is transient: recovery will look for the job by its tag.
    t = ReplayTransport().expect(MKDIR).expect(submit.argv, CommandTimeout("sbatch timed out"))
    with pytest.raises(SiteUnavailable):
        slurm(t).submit(request())
    t = ReplayTransport().expect(MKDIR, Recording(1, b"", b"mkdir: Permission denied\n"))
    with pytest.raises(SiteUnavailable, match="Permission denied"):
        slurm(t).submit(request())
    # An invalid request never reaches the site.
    t = ReplayTransport()
    with pytest.raises(SubmitRejected):
        slurm(t).submit(request(env={"NOT VALID": "x"}))
    assert t.calls == [] and t.files == {}


def test_estimate_and_queues_through_the_adapter() -> None:
    d = SlurmDialect()
    t = ReplayTransport().expect(d.estimate_command(request(), LAYOUT).argv,
                                 load("slurm", "sbatch_test_only.txt"))
    t.expect(d.queues_command(), load("slurm", "sinfo.txt"))
    adapter = slurm(t)
    estimate = adapter.estimate_start(request())
    assert estimate is not None and estimate.queue == "debug"
    assert [q.name for q in adapter.queues()] == ["debug", "long", "maint"]
    assert BatchAdapter(ReplayTransport(), SgeDialect()).estimate_start(request()) is None


def test_read_output() -> None:
    t = ReplayTransport()
    t.put_bytes(b"hello world", f"{WORKDIR}/stdout")
    adapter = slurm(t)
    chunk = adapter.read_output(WORKDIR, "stdout", 6, 100)
    assert (chunk.data, chunk.offset, chunk.size) == (b"world", 6, 11)
    missing = adapter.read_output(WORKDIR, "stderr", 0, 100)
    assert (missing.data, missing.size) == (b"", None)
    with pytest.raises(AdapterError):
        adapter.read_output(WORKDIR, "core", 0, 1)  # type: ignore[arg-type]
    for bad in ("relative/job", f"{WORKDIR}/../../etc"):
        with pytest.raises(AdapterError, match="not an absolute path"):
            adapter.read_output(bad, "stdout", 0, 1)


# -- cancels (Grid Engine, whose accounting forgets jobs deleted while pending) ---------


def sge(t: ReplayTransport, **kwargs: object) -> BatchAdapter:
    return BatchAdapter(t, SgeDialect(parallel_environment="mpi"), **kwargs)  # type: ignore[arg-type]


def test_pending_job_cancelled_then_vanished_is_cancelled() -> None:
    # Recorded on the testbed: qdel of a pending job, then qacct knows nothing of it.
    t = ReplayTransport().expect(("qdel", "12"), load("sge", "real_qdel_pending.txt"))
    adapter = sge(t)
    adapter.cancel("12")
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "12"), load("sge", "real_qacct_deleted_pending.txt"))
    status = adapter.status(["12"], cancelled={"12"})["12"]
    assert (status.state, status.reason) == (NativeState.CANCELLED, VANISHED_AFTER_CANCEL)
    t.assert_done()


def test_no_conclusion_from_absence_while_accounting_is_down() -> None:
    t = ReplayTransport().expect(("qdel", "12"), load("sge", "real_qdel_pending.txt"))
    adapter = sge(t)
    adapter.cancel("12")
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "12"), Recording(2, b"", b"error: can't open accounting file\n"))
    assert adapter.status(["12"], cancelled={"12"}) == {}


def test_a_vanished_job_nobody_cancelled_stays_unanswered() -> None:
    t = ReplayTransport().expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "12"), load("sge", "real_qacct_deleted_pending.txt"))
    assert sge(t).status(["12"]) == {}


def test_a_restarted_gateway_knows_its_cancels_from_its_own_record() -> None:
    # The cancel leaves nothing on the site but the scheduler's own answer: the gateway's
    # database is the one record of it (gateway.worker.cancel), and says so after a restart.
    t = ReplayTransport().expect(("qdel", "12"), load("sge", "real_qdel_pending.txt"))
    sge(t).cancel("12")
    assert t.files == {}
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "12"), load("sge", "real_qacct_deleted_pending.txt"))
    restarted = sge(t)  # knows nothing in memory
    assert restarted.status(["12"], cancelled={"12"})["12"].state is NativeState.CANCELLED
    t.assert_done()


def test_running_job_killed_after_our_cancel_is_cancelled_else_failed() -> None:
    t = ReplayTransport().expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "10"), load("sge", "real_qacct_qdel_running.txt"))
    killed = sge(t).status(["10"])["10"]
    assert (killed.state, killed.reason) == (NativeState.FAILED, "killed by signal 9")

    t = ReplayTransport().expect(("qdel", "10"), load("sge", "real_qdel_running.txt"))
    adapter = sge(t)
    adapter.cancel("10")
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "10"), load("sge", "real_qacct_qdel_running.txt"))
    cancelled = adapter.status(["10"], cancelled={"10"})["10"]
    assert (cancelled.state, cancelled.exit_code) == (NativeState.CANCELLED, 137)
    assert cancelled.reason == "cancelled (killed by signal 9)"


def test_a_timeout_stays_a_timeout_even_after_a_cancel() -> None:
    t = ReplayTransport().expect(("qdel", "11"), load("sge", "real_qdel_running.txt"))
    adapter = sge(t)
    adapter.cancel("11")
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    t.expect(("qacct", "-m", "-j", "11"), load("sge", "real_qacct_h_rt.txt"))
    assert adapter.status(["11"], cancelled={"11"})["11"].reason == "TIMEOUT"


def test_sge_submit_status_flow() -> None:
    req = request(tag=TAG, resources=Resources(ranks=2, walltime_seconds=600))
    submit = SgeDialect(parallel_environment="mpi").submit_command(req, LAYOUT)
    t = ReplayTransport().expect(MKDIR).expect(submit.argv, load("sge", "real_qsub_ok.txt"))
    t.expect(("qstat", "-xml", "-u", "*"), load("sge", "real_qstat_live.txt"))
    adapter = sge(t)
    assert adapter.submit(req) == "8"
    # 8 left the queue between the two calls: it is not in this listing, qacct decides.
    t.expect(("qacct", "-m", "-j", "8"), load("sge", "real_qacct_completed.txt"))
    found = adapter.status(["8", "10", "12"])
    assert found["8"].state is NativeState.COMPLETED
    assert (found["10"].state, found["12"].state) == (NativeState.RUNNING, NativeState.QUEUED)
    t.assert_done()


# -- schedulers whose status query reports how jobs ended -------------------------------


def test_pbs_finished_jobs_need_no_accounting() -> None:
    ids = ["101.pbsserver", "105.pbsserver"]
    t = ReplayTransport().expect(PbsDialect().status_command(ids), load("pbs", "qstat_jobs.txt"))
    found = BatchAdapter(t, PbsDialect()).status(ids)
    assert found["101.pbsserver"].state is NativeState.COMPLETED
    assert found["105.pbsserver"].state is NativeState.RUNNING
    t.assert_done()


def test_pbs_gone_from_history_is_looked_up_in_the_accounting_log() -> None:
    d = PbsDialect(accounting_dir="/var/spool/pbs/server_priv/accounting")
    t = ReplayTransport().expect(d.status_command(["110.pbsserver"]),
                                 load("pbs", "qstat_all_unknown.txt"))
    t.expect(d.accounting_commands(["110.pbsserver"])[0], load("pbs", "accounting_records.txt"))
    assert BatchAdapter(t, d).status(["110.pbsserver"])["110.pbsserver"].state is (
        NativeState.CANCELLED)
    t.assert_done()


def test_lsf_submit_and_status() -> None:
    d = LsfDialect(clock=lambda: datetime(2025, 11, 22, 3, tzinfo=UTC))
    req = request(tag=f"{PREFIX}01", workdir=f"/scratch/gw/{PREFIX}01", script=None,
                  argv=["true"])
    layout = JobLayout.of(req.workdir)
    # No script to store: the directories are made in the submit's own round trip.
    t = ReplayTransport().expect(
        (*ONE_TRIP, layout.workdir, layout.control_dir, *d.submit_command(req, layout).argv),
        load("lsf", "bsub_ok.txt"))
    t.expect(d.status_command(["2001", "2003"]), load("lsf", "bjobs_jobs.txt"))
    adapter = BatchAdapter(t, d)
    assert adapter.submit(req) == "2001"
    assert f"{layout.control_dir}/script" not in t.files  # argv jobs store no script
    found = adapter.status(["2001", "2003"])
    assert (found["2001"].state, found["2003"].state) == (NativeState.RUNNING,
                                                          NativeState.COMPLETED)
    t.assert_done()


def test_one_trip_submit_runs_in_a_real_shell(tmp_path: Path) -> None:
    """The mkdir-then-exec wrapper, run by a real `sh`: hostile paths and words stay data."""
    workdir = tmp_path / "scratch" / "gw-x; touch pwned $(id) 'q"
    dialect = SlurmDialect(commands=SlurmCommands(sbatch=str(_fake_sbatch(tmp_path))))
    adapter = BatchAdapter(LocalTransport(), dialect)
    req = request(workdir=str(workdir), script=None, argv=["echo", "$(id)", "; rm -rf /"])
    assert adapter.submit(req) == "42"
    assert workdir.is_dir() and (workdir.stat().st_mode & 0o777) == 0o700
    assert (workdir / ".gridgate").is_dir()
    assert not list(tmp_path.glob("**/pwned")) and not Path("pwned").exists()
    # sbatch saw the batch script on stdin, its options intact.
    assert f"--chdir={workdir}" in (tmp_path / "sbatch.args").read_text().split("\0")
    assert b"$(id)" in (tmp_path / "sbatch.stdin").read_bytes()

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.raises(SiteUnavailable, match=r"cannot create .* on the site: .*Not a directory"):
        adapter.submit(request(workdir=str(blocked / "job"), script=None, argv=["true"]))


def _fake_sbatch(tmp_path: Path) -> Path:
    """An `sbatch` that records its argv and stdin and prints a job id, as --parsable does."""
    fake = tmp_path / "sbatch"
    fake.write_text(f"""#!/bin/sh
printf '%s\\0' "$@" > {tmp_path}/sbatch.args
cat > {tmp_path}/sbatch.stdin
echo 42
""")
    fake.chmod(0o755)
    return fake


def test_submit_many_runs_a_batch_in_a_real_shell(tmp_path: Path) -> None:
    """Several jobs in one remote command, through a real `sh`: each gets its own id or
    its own refusal, hostile text stays data, and a job whose directory cannot be made
    fails alone."""
    fake = tmp_path / "sbatch"
    fake.write_text(f"""#!/bin/sh
script=$(cat)
case "$*" in *--partition=nope*) echo "sbatch: error: invalid partition" >&2; exit 1;; esac
n=$(($(cat {tmp_path}/n 2>/dev/null || echo 100) + 1)); echo $n > {tmp_path}/n
printf '%s' "$script" > {tmp_path}/script-$n
echo "sbatch: warning: a line before the id"
echo $n
""")
    fake.chmod(0o755)
    adapter = BatchAdapter(LocalTransport(),
                           SlurmDialect(commands=SlurmCommands(sbatch=str(fake))))
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    hostile = ["echo", "$(touch pwned)", "; rm -rf /", "new\nline"]
    requests = [
        request(workdir=str(tmp_path / "gw-a"), script=None, argv=hostile),
        request(workdir=str(tmp_path / "gw-b"), script=None, argv=["true"], partition="nope"),
        request(workdir=str(blocked / "gw-c"), script=None, argv=["true"]),
        request(workdir=str(tmp_path / "gw-d"), script=None, argv=["true"],
                env={"NOT VALID": "x"}),
        request(workdir=str(tmp_path / "gw-e x'y"), script=None, argv=["true"]),
    ]
    # A small size limit: the five jobs go in several commands.
    outcomes = adapter.submit_many(requests, max_script_bytes=4096)
    assert outcomes[0] == "101" and outcomes[4] == "102", outcomes
    assert isinstance(outcomes[1], SubmitRejected) and "invalid partition" in str(outcomes[1])
    assert isinstance(outcomes[2], SiteUnavailable) and "Not a directory" in str(outcomes[2])
    assert isinstance(outcomes[3], SubmitRejected)  # refused before the site
    assert (tmp_path / "gw-a" / ".gridgate").is_dir()
    assert (tmp_path / "gw-e x'y").stat().st_mode & 0o777 == 0o700
    assert "$(touch pwned)" in (tmp_path / "script-101").read_text()
    assert not list(tmp_path.glob("**/pwned")) and not Path("pwned").exists()
    with pytest.raises(ValueError):
        adapter.submit_many([request()])  # a user script must be stored first: not here


def test_parse_batch_drops_a_cut_short_record() -> None:
    argvs = [("sbatch",), ("sbatch",)]
    whole = b"gw-submit 0 0 2\n42\ngw-submit 1 1 5\nerr\nx\n"
    found = parse_batch(whole, argvs)
    assert found[0].stdout == b"42" and found[1].stderr == b"err\nx"
    assert list(parse_batch(whole[:-3], argvs)) == [0]
    assert parse_batch(b"garbage", argvs) == {}
