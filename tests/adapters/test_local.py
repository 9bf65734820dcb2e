"""The local site adapter, with real processes: runners, jobs, MPI through the mpich wheel."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

import adapters
from adapters.base import JobStatus, MpiRequest, NativeState, Resources, SubmitRequest
from adapters.errors import AdapterError, SubmitRejected, UnknownJob
from adapters.local import LocalAdapter
from adapters.local.files import JobFiles, read_json, write_atomic
from adapters.local.launch import LaunchConfig, build_plan
from adapters.local.procs import ProcessId, job_processes, read_stat, signal_processes
from adapters.local.records import ChildRecord, Claim
from adapters.local.runner import classify
from adapters.local.sandbox import SandboxConfig

PY = sys.executable
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")
CODE_ROOT = str(Path(adapters.__file__).resolve().parents[1])
DEADLINE = 60.0

ECHO = """\
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}))
"""


# -- helpers ---------------------------------------------------------------------


def wait_for(what: str, check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """Poll `check` until it returns something truthy; fail after `deadline` seconds."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def wait_final(adapter: LocalAdapter, native_id: str) -> JobStatus:
    def final() -> JobStatus | None:
        status = adapter.status([native_id]).get(native_id)
        return status if status is not None and status.state.is_final else None

    result: JobStatus = wait_for(f"{native_id} to finish", final)
    return result


def wait_state(adapter: LocalAdapter, native_id: str, state: NativeState) -> JobStatus:
    def reached() -> JobStatus | None:
        status = adapter.status([native_id]).get(native_id)
        return status if status is not None and status.state == state else None

    result: JobStatus = wait_for(f"{native_id} to be {state}", reached)
    return result


def gone(pid: int, start_time: int) -> bool:
    """The process has exited and been reaped (or its pid now names another process)."""
    stat_ = read_stat(pid)
    return stat_ is None or stat_.start_time != start_time


def not_running(pid: int, start_time: int) -> bool:
    """Exited; a zombie counts (orphans of a dead runner go to an init that may not reap)."""
    return not ProcessId(pid, start_time).is_alive()


def identity(pid: int) -> ProcessId:
    proc = ProcessId.of(pid)
    assert proc is not None, f"process {pid} is not there"
    return proc


def output(adapter: LocalAdapter, req: SubmitRequest, stream: str = "stdout") -> bytes:
    chunk = adapter.read_output(req.workdir, stream, 0, 1 << 20)  # type: ignore[arg-type]
    return chunk.data


def child_of(adapter: LocalAdapter, native_id: str) -> ChildRecord:
    files = adapter.files_of(native_id)
    assert files is not None
    data = wait_for("the child record", lambda: read_json(files.child))
    return ChildRecord.from_json(data)


def job_tree(adapter: LocalAdapter, native_id: str) -> list[ProcessId]:
    """Every live process under the job's runner (host pids: a sandbox has its own)."""
    files = adapter.files_of(native_id)
    assert files is not None
    claim = Claim.from_json(wait_for("the claim", lambda: read_json(files.claim)))
    procs = [ProcessId.of(pid) for pid in job_processes(None, claim.owner.pid)]
    return [p for p in procs if p is not None]


def sandbox_config(hidden: Path) -> SandboxConfig:
    """Jobs confined as the gateway will confine them, with `hidden` as its data directory."""
    bwrap = shutil.which("bwrap")
    assert bwrap, "bubblewrap (bwrap) is not installed: tests/run.sh installs it"
    run_as = (65534, 65534) if os.geteuid() == 0 else None
    return SandboxConfig(bwrap, read_only=(sys.prefix, sys.base_prefix), hidden=(str(hidden),),
                         run_as=run_as)


def run_runner(workdir: str) -> subprocess.CompletedProcess[str]:
    """Run a runner in the foreground, as the adapter would in the background."""
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": CODE_ROOT}
    return subprocess.run(
        [PY, "-m", "adapters.local.runner", workdir],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )


def stop_everything(adapter: LocalAdapter) -> None:
    """Cancel every job under the adapter's root, then kill whatever is still alive."""
    index = adapter.jobs_root / ".index"
    ids = [p.name for p in index.iterdir() if not p.name.startswith(".")] if index.is_dir() else []
    for native_id in ids:
        with suppress(AdapterError, OSError, ValueError):
            adapter.cancel(native_id)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        states = adapter.status(ids)
        if all(s.state.is_final for s in states.values()):
            break
        time.sleep(0.1)
    for native_id in ids:
        files = adapter.files_of(native_id)
        if files is None:
            continue
        claim_data, child_data = read_json(files.claim), read_json(files.child)
        claim = Claim.from_json(claim_data) if claim_data else None
        child = ChildRecord.from_json(child_data).process if child_data else None
        runner_alive = claim is not None and claim.owner.is_alive() and claim.by == "runner"
        ancestor = claim.owner.pid if claim is not None and runner_alive else None
        signal_processes(job_processes(child, ancestor), signal.SIGKILL)
        if claim is not None and runner_alive:
            signal_processes([claim.owner.pid], signal.SIGKILL)


# -- fixtures --------------------------------------------------------------------


@pytest.fixture
def jobs_root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def sandbox(tmp_path: Path) -> SandboxConfig:
    return sandbox_config(tmp_path)


@pytest.fixture
def adapter(jobs_root: Path, sandbox: SandboxConfig) -> Iterator[LocalAdapter]:
    site = LocalAdapter(jobs_root, MPIEXEC, kill_grace_seconds=2.0, sandbox=sandbox)
    try:
        yield site
    finally:
        stop_everything(site)


@pytest.fixture
def make_request(jobs_root: Path) -> Callable[..., SubmitRequest]:
    def make(**fields: Any) -> SubmitRequest:
        fields.setdefault("tag", f"gw-{uuid.uuid4()}")
        fields.setdefault("workdir", str(jobs_root / "u1" / fields["tag"] / "1"))
        return SubmitRequest(**fields)

    return make


@pytest.fixture
def echo_py() -> list[str]:
    """A program that prints its arguments, environment and cwd as JSON."""
    return [PY, "-c", ECHO]


# -- outcomes --------------------------------------------------------------------


def test_exit_zero_completes_with_output(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], jobs_root: Path
) -> None:
    code = "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"
    req = make_request(argv=[PY, "-c", code])
    assert adapter.read_output(req.workdir, "stdout", 0, 100).size is None

    native_id = adapter.submit(req)
    status = wait_final(adapter, native_id)

    assert status.state == NativeState.COMPLETED
    assert (status.raw_state, status.exit_code, status.reason) == ("exited", 0, None)
    assert status.started_at is not None and status.ended_at is not None
    assert status.started_at <= status.ended_at
    assert output(adapter, req) == b"to stdout\n"
    assert output(adapter, req, "stderr") == b"to stderr\n"
    chunk = adapter.read_output(req.workdir, "stdout", 3, 6)
    assert (chunk.data, chunk.offset, chunk.size) == (b"stdout", 3, 10)
    beyond = adapter.read_output(req.workdir, "stdout", 50, 10)
    assert (beyond.data, beyond.size) == (b"", 10)
    # Every directory created for the job is private, parents included.
    workdir = Path(req.workdir)
    for directory in (workdir, workdir.parent, workdir.parent.parent, workdir / ".gridgate"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE((workdir / "stdout").stat().st_mode) == 0o600


def test_nonzero_exit_fails_with_its_code(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    native_id = adapter.submit(make_request(argv=[PY, "-c", "raise SystemExit(3)"]))
    status = wait_final(adapter, native_id)
    assert (status.state, status.exit_code) == (NativeState.FAILED, 3)
    assert (status.raw_state, status.reason) == ("exited", "NonZeroExitCode")


def test_death_by_signal_is_128_plus_signal(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    status = wait_final(adapter, adapter.submit(make_request(argv=[PY, "-c", code])))
    assert (status.state, status.raw_state, status.exit_code) == (
        NativeState.FAILED,
        "signaled",
        128 + signal.SIGKILL,
    )


def test_missing_program_fails_like_a_shell(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(argv=["no-such-program-here"])
    status = wait_final(adapter, adapter.submit(req))
    assert (status.state, status.raw_state, status.exit_code) == (
        NativeState.FAILED,
        "exited",
        127,
    )
    assert b"no-such-program-here" in output(adapter, req, "stderr")


def test_missing_program_fails_like_a_shell_unconfined(
    jobs_root: Path, make_request: Callable[..., SubmitRequest]
) -> None:
    site = LocalAdapter(jobs_root, None)
    status = wait_final(site, site.submit(make_request(argv=["no-such-program-here"])))
    assert (status.state, status.raw_state, status.exit_code) == (
        NativeState.FAILED,
        "launch-failed",
        127,
    )
    assert status.reason is not None and "no-such-program-here" in status.reason


def test_walltime_kills_the_job(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(argv=["sleep", "300"], resources=Resources(walltime_seconds=1))
    native_id = adapter.submit(req)
    sleeper = child_of(adapter, native_id).process

    status = wait_final(adapter, native_id)

    assert (status.state, status.raw_state, status.reason) == (
        NativeState.FAILED,
        "timeout",
        "TIMEOUT",
    )
    assert status.exit_code == 128 + signal.SIGTERM
    assert gone(sleeper.pid, sleeper.start_time)


def test_walltime_escalates_to_sigkill(
    jobs_root: Path, make_request: Callable[..., SubmitRequest], sandbox: SandboxConfig
) -> None:
    site = LocalAdapter(jobs_root, MPIEXEC, kill_grace_seconds=1.0, sandbox=sandbox)
    # Deaf to SIGTERM from its first instruction (ignored before the exec, and inherited):
    # a program that installs its own handler might not have done so when the walltime ends.
    req = make_request(argv=["env", "--ignore-signal=TERM", "sleep", "300"],
                       resources=Resources(walltime_seconds=1))
    try:
        native_id = site.submit(req)
        stubborn = child_of(site, native_id).process
        status = wait_final(site, native_id)
        assert (status.state, status.reason) == (NativeState.FAILED, "TIMEOUT")
        assert status.exit_code == 128 + signal.SIGKILL
        assert gone(stubborn.pid, stubborn.start_time)
    finally:
        stop_everything(site)


# -- cancel ----------------------------------------------------------------------

SPAWNER = """\
import json, subprocess, sys, time
grandchild = subprocess.Popen(["sleep", "300"])
with open("pids.tmp", "w") as f:
    json.dump({"child": __import__("os").getpid(), "grandchild": grandchild.pid}, f)
__import__("os").rename("pids.tmp", "pids.json")
time.sleep(300)
"""


def test_cancel_kills_the_whole_group(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(argv=[PY, "-c", SPAWNER])
    native_id = adapter.submit(req)
    pids_file = Path(req.workdir) / "pids.json"
    wait_for("the job's pids", lambda: pids_file.exists())
    # The sandbox has its own pid namespace: find the job's processes from outside.
    procs = job_tree(adapter, native_id)
    assert len(procs) >= 4  # bwrap, the sandbox's init, the program and its child
    assert adapter.status([native_id])[native_id].state == NativeState.RUNNING

    adapter.cancel(native_id)
    status = wait_final(adapter, native_id)

    assert (status.state, status.raw_state) == (NativeState.CANCELLED, "cancelled")
    for proc in procs:
        assert gone(proc.pid, proc.start_time), proc
    adapter.cancel(native_id)  # idempotent
    assert adapter.status([native_id])[native_id].state == NativeState.CANCELLED


def test_cancel_before_any_runner_started(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(argv=["touch", "ran"])
    marker = Path(req.workdir) / "ran"
    native_id = adapter.prepare(req)  # the job directory, but no runner yet
    assert adapter.status([native_id])[native_id].state == NativeState.QUEUED
    assert adapter.status([native_id])[native_id].raw_state == "pending"

    adapter.cancel(native_id)

    status = adapter.status([native_id])[native_id]
    assert (status.state, status.reason) == (NativeState.CANCELLED, "cancelled before start")
    # A later submit (a recovering gateway) finds the job owned and starts nothing.
    assert adapter.submit(req) == native_id
    files = adapter.files_of(native_id)
    assert files is not None and not files.spawned.exists()
    assert not marker.exists()


def test_runner_checks_the_cancel_marker_before_starting(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(argv=["touch", "ran"])
    marker = Path(req.workdir) / "ran"
    native_id = adapter.prepare(req)
    files = adapter.files_of(native_id)
    assert files is not None
    write_atomic(files.cancel, b"test\n")  # a cancel whose own claim attempt never happened

    assert run_runner(req.workdir).returncode == 0

    status = adapter.status([native_id])[native_id]
    assert status.state == NativeState.CANCELLED
    assert not marker.exists()


def test_cancel_right_after_submit(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    native_id = adapter.submit(make_request(argv=["sleep", "300"]))
    adapter.cancel(native_id)
    assert wait_final(adapter, native_id).state == NativeState.CANCELLED


def test_cancel_of_a_finished_job_changes_nothing(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    native_id = adapter.submit(make_request(argv=["true"]))
    assert wait_final(adapter, native_id).state == NativeState.COMPLETED
    adapter.cancel(native_id)
    assert adapter.status([native_id])[native_id].state == NativeState.COMPLETED
    files = adapter.files_of(native_id)
    assert files is not None and not files.cancel.exists()


def test_unknown_ids(adapter: LocalAdapter) -> None:
    ids = ["local-" + "0" * 24, "garbage", "../../etc/passwd", "local-../../x"]
    assert adapter.status(ids) == {}
    for native_id in ids:
        with pytest.raises(UnknownJob):
            adapter.cancel(native_id)


# -- data is data ----------------------------------------------------------------


def test_hostile_args_and_env_arrive_literally(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    echo_py: list[str],
) -> None:
    evil = "x; touch pwned $(id)"
    args = [evil, "line1\nline2", "`id`", "$HOME", "*", "'", '"', "\\", ""]
    env = {"EVIL": evil, "MULTI": "a\nb", "STAR": "*"}
    req = make_request(argv=[*echo_py, *args], env=env)

    assert wait_final(adapter, adapter.submit(req)).state == NativeState.COMPLETED

    seen = json.loads(output(adapter, req))
    assert seen["argv"] == args
    assert {k: seen["env"][k] for k in env} == env
    assert not (Path(req.workdir) / "pwned").exists()


def test_hostile_args_through_mpiexec(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    echo_py: list[str],
) -> None:
    evil = "x; touch pwned $(id)"
    req = make_request(
        argv=[*echo_py, evil, "a\nb"],
        env={"EVIL": evil},
        resources=Resources(ranks=2),
        mpi=MpiRequest(launcher="mpirun"),
    )
    assert wait_final(adapter, adapter.submit(req)).state == NativeState.COMPLETED
    lines = [json.loads(line) for line in output(adapter, req).splitlines()]
    assert len(lines) == 2
    for seen in lines:
        assert seen["argv"] == [evil, "a\nb"]
        assert seen["env"]["EVIL"] == evil
    assert not (Path(req.workdir) / "pwned").exists()


def test_environment_is_clean(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    echo_py: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRIDGATE_TEST_LEAK", "from the gateway")
    req = make_request(
        argv=echo_py,
        env={"MY_VAR": "1", "GRIDGATE_JOB_TAG": "forged"},
        resources=Resources(threads_per_rank=3),
    )
    assert wait_final(adapter, adapter.submit(req)).state == NativeState.COMPLETED

    seen = json.loads(output(adapter, req))
    assert set(seen["env"]) == {
        "PATH",
        "HOME",
        "LANG",
        "USER",
        "LOGNAME",
        "OMP_NUM_THREADS",
        "MY_VAR",
        "GRIDGATE_JOB_TAG",
        "GRIDGATE_WORKDIR",
    }
    assert seen["env"]["GRIDGATE_JOB_TAG"] == req.tag
    assert seen["env"]["GRIDGATE_WORKDIR"] == str(Path(req.workdir).resolve())
    assert seen["env"]["OMP_NUM_THREADS"] == "3"
    assert seen["env"]["USER"] == seen["env"]["LOGNAME"] == pwd.getpwuid(os.getuid()).pw_name
    assert seen["cwd"] == str(Path(req.workdir).resolve())


def test_script_without_shebang_runs_under_sh(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], tmp_path: Path
) -> None:
    req = make_request(script='echo "tag=$GRIDGATE_JOB_TAG"\nexit 4\n')
    status = wait_final(adapter, adapter.submit(req))
    assert (status.state, status.exit_code) == (NativeState.FAILED, 4)
    assert output(adapter, req) == f"tag={req.tag}\n".encode()
    script = Path(req.workdir) / ".gridgate" / "script"
    assert stat.S_IMODE(script.stat().st_mode) == 0o700


def test_script_with_shebang_runs_directly(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(script=f"#!{PY}\nimport sys\nprint(sys.argv[0])\n")
    assert wait_final(adapter, adapter.submit(req)).state == NativeState.COMPLETED
    assert output(adapter, req).decode().strip().endswith("/.gridgate/script")


def test_output_symlink_is_not_followed(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], tmp_path: Path
) -> None:
    req = make_request(argv=["true"])
    secret = tmp_path / "secret"
    secret.write_text("not yours")
    Path(req.workdir).mkdir(parents=True)
    os.symlink(secret, Path(req.workdir) / "stdout")
    with pytest.raises(AdapterError):
        adapter.read_output(req.workdir, "stdout", 0, 100)


# -- exactly once, across crashes --------------------------------------------------

COUNTER = "import sys\nwith open(sys.argv[1], 'a') as f:\n    f.write('ran\\n')\n"


def test_double_submit_runs_once(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    jobs_root: Path,
    tmp_path: Path,
) -> None:
    req = make_request(argv=[PY, "-c", COUNTER, "count"])
    counter = Path(req.workdir) / "count"
    other_gateway = LocalAdapter(jobs_root, MPIEXEC, sandbox=adapter.sandbox)

    ids = {adapter.submit(req), adapter.submit(req), other_gateway.submit(req)}

    assert len(ids) == 1
    native_id = ids.pop()
    assert wait_final(adapter, native_id).state == NativeState.COMPLETED
    assert adapter.submit(req) == native_id  # after the end: the same job, not a new run
    assert adapter.status([native_id])[native_id].state == NativeState.COMPLETED
    assert counter.read_text() == "ran\n"


def test_racing_runners_run_the_job_once(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], tmp_path: Path
) -> None:
    req = make_request(argv=[PY, "-c", COUNTER, "count"])
    counter = Path(req.workdir) / "count"
    native_id = adapter.prepare(req)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": CODE_ROOT}
    runners = [
        subprocess.Popen(
            [PY, "-m", "adapters.local.runner", req.workdir],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    logs = [r.communicate(timeout=DEADLINE)[1] for r in runners]

    assert wait_final(adapter, native_id).state == NativeState.COMPLETED
    assert counter.read_text() == "ran\n"
    assert sum("already claimed" in log for log in logs) == 3


def test_crash_before_the_runner_started_is_recovered(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], tmp_path: Path
) -> None:
    req = make_request(argv=[PY, "-c", COUNTER, "count"])
    counter = Path(req.workdir) / "count"
    assert adapter.find_by_tag(req.tag, req.workdir) is None  # crash window (a)

    native_id = adapter.prepare(req)  # crash window (b): request written, no runner
    assert adapter.find_by_tag(req.tag, req.workdir) is None

    assert adapter.submit(req) == native_id  # what a recovering gateway does
    assert wait_final(adapter, native_id).state == NativeState.COMPLETED
    assert adapter.find_by_tag(req.tag, req.workdir) == native_id
    assert adapter.find_by_tag("gw-someone-else", req.workdir) is None
    assert counter.read_text() == "ran\n"


SUBMITTER = """\
import os, signal, sys
from pathlib import Path
from adapters.base import SubmitRequest
from adapters.local import LocalAdapter

site = LocalAdapter(Path(sys.argv[1]), None)
native_id = site.submit(SubmitRequest(tag=sys.argv[2], workdir=sys.argv[3], argv=sys.argv[4:]))
print(native_id, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""

WAIT_FOR_GO = """\
import os, time
while not os.path.exists("go"):
    time.sleep(0.05)
print("went")
"""


def test_job_outlives_the_gateway_that_submitted_it(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], jobs_root: Path
) -> None:
    req = make_request(argv=[PY, "-c", WAIT_FOR_GO])
    gateway = subprocess.run(
        [PY, "-c", SUBMITTER, str(jobs_root), req.tag, req.workdir, *(req.argv or [])],
        env={**os.environ, "PYTHONPATH": CODE_ROOT},
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert gateway.returncode == -signal.SIGKILL, gateway.stderr
    native_id = gateway.stdout.strip()

    # The submitting process is dead; only now may the job finish.
    (Path(req.workdir) / "go").touch()

    # Once its runner has claimed it, a recovering gateway finds the job by its tag.
    found = wait_for("the claim", lambda: adapter.find_by_tag(req.tag, req.workdir))
    assert found == native_id
    assert wait_final(adapter, native_id).state == NativeState.COMPLETED
    assert output(adapter, req) == b"went\n"


def test_a_dead_runner_is_reported_lost(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    native_id = adapter.submit(make_request(argv=["sleep", "300"]))
    program = child_of(adapter, native_id).process
    files = adapter.files_of(native_id)
    assert files is not None
    claim = Claim.from_json(read_json(files.claim) or {})
    assert claim.owner.is_alive()

    os.kill(claim.owner.pid, signal.SIGKILL)
    wait_for("the runner to die", lambda: not claim.owner.is_alive())

    status = wait_final(adapter, native_id)
    assert (status.state, status.raw_state) == (NativeState.FAILED, "lost")
    assert status.reason == ("LOST: runner process disappeared without recording an outcome")
    wait_for("the orphaned program to stop", lambda: not_running(program.pid, program.start_time))
    assert adapter.status([native_id])[native_id] == status  # recorded, stable


def test_a_runner_that_never_starts_is_reported(
    jobs_root: Path, make_request: Callable[..., SubmitRequest]
) -> None:
    site = LocalAdapter(jobs_root, None, python="/bin/false", runner_start_timeout=0.0)
    native_id = site.submit(make_request(argv=["true"]))
    status = wait_final(site, native_id)
    assert (status.state, status.raw_state) == (NativeState.FAILED, "lost")
    assert status.reason is not None and "did not start" in status.reason


# -- MPI -------------------------------------------------------------------------

HELLO = """\
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
print(f"rank {comm.Get_rank()} of {comm.Get_size()} threads {os.environ['OMP_NUM_THREADS']}")
"""


def test_mpi_hello_on_two_ranks(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(
        argv=[PY, "-c", HELLO],
        resources=Resources(ranks=2, threads_per_rank=2),
        mpi=MpiRequest(launcher="mpirun"),
    )
    status = wait_final(adapter, adapter.submit(req))
    assert status.state == NativeState.COMPLETED, output(adapter, req, "stderr")
    assert sorted(output(adapter, req).decode().splitlines()) == [
        "rank 0 of 2 threads 2",
        "rank 1 of 2 threads 2",
    ]


MPI_SLEEPER = """\
import os, time
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
with open(f"rank{rank}.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(f"rank{rank}.tmp", f"rank{rank}.pid")
time.sleep(300)
"""


def test_cancel_stops_every_mpi_rank(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    req = make_request(
        argv=[PY, "-c", MPI_SLEEPER], resources=Resources(ranks=2), mpi=MpiRequest("mpirun")
    )
    native_id = adapter.submit(req)
    pid_files = [Path(req.workdir) / f"rank{r}.pid" for r in (0, 1)]
    wait_for("both ranks", lambda: all(p.exists() for p in pid_files))
    # bwrap, its init, mpiexec, the hydra proxy and both ranks, seen from outside.
    procs = job_tree(adapter, native_id)
    assert len(procs) >= 6

    adapter.cancel(native_id)

    assert wait_final(adapter, native_id).state == NativeState.CANCELLED
    for proc in procs:
        assert gone(proc.pid, proc.start_time), proc


# -- refused requests ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"argv": ["x"], "mpi": MpiRequest(launcher="srun")}, "srun"),
        ({"argv": ["x"], "script": "echo"}, "exactly one"),
        ({}, "exactly one"),
        ({"argv": []}, "name a program"),
        ({"argv": ["echo", "a\x00b"]}, "NUL"),
        ({"argv": ["env"], "env": {"BAD-NAME": "1"}}, "BAD-NAME"),
        ({"argv": ["env"], "env": {"A": "x\x00"}}, "NUL"),
        ({"argv": ["x"], "resources": Resources(walltime_seconds=0)}, "walltime"),
    ],
)
def test_bad_requests_are_rejected(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    fields: dict[str, Any],
    message: str,
) -> None:
    req = make_request(**fields)
    with pytest.raises(SubmitRejected, match=message):
        adapter.submit(req)
    assert not Path(req.workdir).exists()


def test_mpi_needs_a_configured_launcher(
    jobs_root: Path, make_request: Callable[..., SubmitRequest]
) -> None:
    site = LocalAdapter(jobs_root, None)
    with pytest.raises(SubmitRejected, match="no MPI launcher"):
        site.submit(make_request(argv=["x"], mpi=MpiRequest(launcher="mpirun")))


def test_workdirs_outside_the_jobs_root_are_refused(
    adapter: LocalAdapter,
    make_request: Callable[..., SubmitRequest],
    jobs_root: Path,
    tmp_path: Path,
) -> None:
    jobs_root.mkdir()
    (jobs_root / "escape").symlink_to(tmp_path)
    outside = [
        str(tmp_path / "elsewhere"),
        str(jobs_root),
        str(jobs_root / ".." / "sibling"),
        str(jobs_root / "escape" / "job"),
        str(jobs_root / ".index" / "job"),
        "relative/job",
    ]
    for workdir in outside:
        with pytest.raises(SubmitRejected, match=r"jobs root|absolute"):
            adapter.submit(make_request(argv=["true"], workdir=workdir))
        with pytest.raises(AdapterError):
            adapter.find_by_tag("gw-x", workdir)
        with pytest.raises(AdapterError):
            adapter.read_output(workdir, "stdout", 0, 10)
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "job").exists()


def test_a_directory_holds_one_job(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    first = make_request(argv=["true"])
    adapter.prepare(first)
    with pytest.raises(SubmitRejected, match="already belongs"):
        adapter.submit(make_request(argv=["true"], workdir=first.workdir))


# -- pure parts ------------------------------------------------------------------

CONFIG = LaunchConfig(
    mpiexec="/opt/mpi/mpiexec", path="/bin", home="/h", lang="C.UTF-8", kill_grace_seconds=5
)
SCRIPT = Path("/jobs/j/.gridgate/script")


@pytest.mark.parametrize(
    ("fields", "argv"),
    [
        ({"argv": ["prog", "a b"]}, ("prog", "a b")),
        ({"script": "echo hi"}, ("/bin/sh", str(SCRIPT))),
        ({"script": "#!/usr/bin/env python3\n"}, (str(SCRIPT),)),
        (
            {"argv": ["prog"], "mpi": MpiRequest("mpirun"), "resources": Resources(ranks=4)},
            ("/opt/mpi/mpiexec", "-n", "4", "prog"),
        ),
        (
            {"script": "hostname", "mpi": MpiRequest("mpirun"), "resources": Resources(ranks=2)},
            ("/opt/mpi/mpiexec", "-n", "2", "/bin/sh", str(SCRIPT)),
        ),
    ],
)
def test_launch_argv(fields: dict[str, Any], argv: tuple[str, ...]) -> None:
    req = SubmitRequest(tag="gw-1", workdir="/jobs/j", **fields)
    plan = build_plan(req, "local-x", Path("/jobs/j"), SCRIPT, CONFIG)
    assert plan.argv == argv
    assert plan.walltime_seconds == 3600 and plan.kill_grace_seconds == 5


@pytest.mark.parametrize(
    ("cause", "wait_status", "expected"),
    [
        (None, 0, (NativeState.COMPLETED, "exited", None)),
        (None, 3 << 8, (NativeState.FAILED, "exited", "NonZeroExitCode")),
        (None, signal.SIGSEGV, (NativeState.FAILED, "signaled", "NonZeroExitCode")),
        ("timeout", signal.SIGTERM, (NativeState.FAILED, "timeout", "TIMEOUT")),
        ("timeout", 0, (NativeState.FAILED, "timeout", "TIMEOUT")),
        ("cancel", signal.SIGTERM, (NativeState.CANCELLED, "cancelled", "cancel requested")),
        ("cancel", 0, (NativeState.CANCELLED, "cancelled", "cancel requested")),
    ],
)
def test_classify(cause: Any, wait_status: int, expected: tuple[Any, ...]) -> None:
    assert classify(cause, wait_status) == expected


def test_job_files_layout() -> None:
    files = JobFiles(Path("/j"))
    assert files.output("stdout") == Path("/j/stdout")
    assert files.result == Path("/j/.gridgate/result.json")
    assert files.request == Path("/j/.gridgate/request.json")
