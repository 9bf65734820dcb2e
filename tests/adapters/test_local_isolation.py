"""A local job cannot reach the gateway's data: keys, database, store, other jobs; nor
anything listening on the gateway host's loopback.

The layout is the gateway's own: DATA/signing-key.pem, DATA/gridgate.db, DATA/jobs/<tag>.
Each test runs a real job in the sandbox the gateway uses (bubblewrap; as root, an
unprivileged uid) and checks that the attempt is refused while normal work still runs.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.base import MpiRequest, NativeState, Resources, SubmitRequest
from adapters.local import LocalAdapter
from tests.adapters.test_local import (
    MPIEXEC,
    PY,
    output,
    sandbox_config,
    stop_everything,
    wait_final,
)

SECRET = "-----BEGIN PRIVATE KEY-----not for jobs"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "jobs").mkdir(parents=True, mode=0o700)
    for name, text in (("signing-key.pem", SECRET), ("gridgate.db", "SQLite format 3\0")):
        (data / name).write_text(text)
        os.chmod(data / name, 0o600)
    return data


@pytest.fixture
def adapter(data_dir: Path) -> Iterator[LocalAdapter]:
    site = LocalAdapter(data_dir / "jobs", MPIEXEC, kill_grace_seconds=2.0,
                        sandbox=sandbox_config(data_dir))
    try:
        yield site
    finally:
        stop_everything(site)


@pytest.fixture
def make_request(data_dir: Path) -> Callable[..., SubmitRequest]:
    def make(**fields: Any) -> SubmitRequest:
        fields.setdefault("tag", f"gw-{uuid.uuid4()}")
        fields.setdefault("workdir", str(data_dir / "jobs" / fields["tag"]))
        return SubmitRequest(**fields)

    return make


def run(adapter: LocalAdapter, req: SubmitRequest) -> tuple[NativeState, str, str]:
    status = wait_final(adapter, adapter.submit(req))
    return status.state, output(adapter, req).decode(), output(adapter, req, "stderr").decode()


def refused(stderr: str, count: int) -> bool:
    why = ("No such file or directory", "Directory nonexistent", "Permission denied")
    return sum(stderr.count(text) for text in why) >= count


def test_a_job_cannot_read_the_signing_key(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], data_dir: Path
) -> None:
    script = (f'cat "$GRIDGATE_WORKDIR/../../signing-key.pem"; cat {data_dir}/signing-key.pem; '
              "echo done")
    state, out, err = run(adapter, make_request(argv=["/bin/sh", "-c", script]))
    assert state == NativeState.COMPLETED
    assert SECRET not in out and out == "done\n"
    assert refused(err, 2), err


def test_a_job_cannot_open_the_database(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], data_dir: Path
) -> None:
    db = data_dir / "gridgate.db"
    code = f"""
for mode in ("rb", "r+b", "ab"):
    try:
        open({str(db)!r}, mode).close()
        print("opened", mode)
    except OSError as exc:
        print("refused", mode, exc.strerror)
"""
    state, out, _ = run(adapter, make_request(argv=[PY, "-c", code]))
    assert state == NativeState.COMPLETED
    assert "opened" not in out and out.count("refused") == 3, out
    assert db.read_text() == "SQLite format 3\0"


def test_a_job_cannot_touch_another_jobs_directory(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    victim = make_request(argv=["/bin/sh", "-c", "echo mine"])
    assert run(adapter, victim)[:2] == (NativeState.COMPLETED, "mine\n")
    script = 'echo evil >> "$1/stdout"; echo evil > "$1/planted"; ls "$1"; echo done'
    state, out, err = run(adapter, make_request(
        argv=["/bin/sh", "-c", script, "sh", victim.workdir]))
    assert (state, out) == (NativeState.COMPLETED, "done\n")
    assert refused(err, 3), err
    assert output(adapter, victim) == b"mine\n"
    assert not (Path(victim.workdir) / "planted").exists()


def test_a_job_cannot_forge_its_control_files(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    # result.json and child decide what the gateway reports and which processes it kills.
    script = ('echo "{}" > .gridgate/result.json; echo "{}" > .gridgate/child; '
              "mv .gridgate elsewhere; ls -A .gridgate; exit 3")
    req = make_request(argv=["/bin/sh", "-c", script])
    status = wait_final(adapter, adapter.submit(req))
    assert (status.state, status.exit_code) == (NativeState.FAILED, 3)
    assert output(adapter, req) == b""  # the job saw an empty control directory
    files = adapter.files_of(status.native_id)
    assert files is not None and files.child.read_text().startswith("{\n")


def test_a_job_cannot_reach_the_hosts_loopback(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest]
) -> None:
    # What the gateway's API and PostgreSQL are: listeners on the host's 127.0.0.1 and ::1.
    with socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True) as server:
        port = server.getsockname()[1]
        code = f"""
import socket
for host in ("127.0.0.1", "::1"):
    try:
        socket.create_connection((host, {port}), timeout=10).close()
        print(host, "connected")
    except OSError as exc:
        print(host, exc.strerror)
"""
        state, out, err = run(adapter, make_request(argv=[PY, "-c", code]))
    assert state == NativeState.COMPLETED, err
    assert out.splitlines() == ["127.0.0.1 Connection refused", "::1 Connection refused"], out


def test_a_job_whose_network_cannot_be_attached_never_runs(
    data_dir: Path, make_request: Callable[..., SubmitRequest]
) -> None:
    config = replace(sandbox_config(data_dir), network="outbound", slirp4netns="/bin/false")
    adapter = LocalAdapter(data_dir / "jobs", None, sandbox=config)
    try:
        req = make_request(argv=["/bin/sh", "-c", "echo ran"])
        status = wait_final(adapter, adapter.submit(req))
        assert status.state == NativeState.FAILED
        assert str(status.reason).startswith("cannot prepare the job's sandbox: network: "
                                             "slirp4netns could not attach"), status
        assert output(adapter, req) == b""
    finally:
        stop_everything(adapter)


def test_normal_work_runs_in_the_sandbox(
    adapter: LocalAdapter, make_request: Callable[..., SubmitRequest], data_dir: Path
) -> None:
    """Outputs in its directory, its staged inputs (one shared with the cache), MPI."""
    cache = data_dir / "jobs" / ".gridgate-cache"
    cache.mkdir(mode=0o700)
    (cache / "blob").write_text("shared input\n")
    os.chmod(cache / "blob", 0o600)
    code = """
import os
from mpi4py import MPI
rank = MPI.COMM_WORLD.Get_rank()
with open(f"out{rank}.txt", "w") as f:
    f.write(open("inputs/own.txt").read() + open("inputs/cached.txt").read())
if rank == 0:
    try:
        open("inputs/cached.txt", "a").write("poison")
    except OSError as exc:
        print("cache refused", exc.strerror)
"""
    req = make_request(argv=[PY, "-c", code], resources=Resources(ranks=2),
                       mpi=MpiRequest(launcher="mpirun"))
    adapter.prepare(req)
    # What staging does: inputs written by the gateway, one hard-linked from the cache.
    inputs = Path(req.workdir) / "inputs"
    inputs.mkdir(mode=0o700)
    (inputs / "own.txt").write_text("own input\n")
    os.chmod(inputs / "own.txt", 0o600)
    os.link(cache / "blob", inputs / "cached.txt")

    state, out, err = run(adapter, req)

    assert state == NativeState.COMPLETED, err
    assert out.startswith("cache refused")
    for rank in (0, 1):
        text = (Path(req.workdir) / f"out{rank}.txt").read_text()
        assert text == "own input\nshared input\n"
    assert (cache / "blob").read_text() == "shared input\n"
