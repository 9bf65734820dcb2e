"""LocalTransport: the same Transport contract, with real local processes and files."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from adapters.errors import SiteUnavailable
from adapters.transport import (
    CommandTimeout,
    FileTransferError,
    InvalidCommand,
    LocalTransport,
    OutputTooLarge,
    Transport,
    remote_command,
)
from tests.ssh.conftest import HOSTILE, processes_matching, wait_for


def test_is_a_transport() -> None:
    transport: Transport = LocalTransport()
    assert transport.run(["true"]).exit_status == 0


def test_argv_is_passed_without_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    args = [arg.format(marker=marker) for arg in HOSTILE]
    result = LocalTransport().run(["printf", r"%s\0", *args])
    assert result.stdout.split(b"\0")[:-1] == [a.encode() for a in args]
    assert not marker.exists()
    with pytest.raises(InvalidCommand):
        LocalTransport().run("echo hi")


def test_remote_command_quotes_every_element() -> None:
    assert remote_command(["printf", "%s", "x; touch /tmp/pwned $(id)"]) == (
        "printf %s 'x; touch /tmp/pwned $(id)'")
    assert remote_command(["echo", "it's", ""]) == "echo 'it'\"'\"'s' ''"


def test_stdin_exit_status_and_missing_programs(tmp_path: Path) -> None:
    transport = LocalTransport(cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin", "GW": "1"})
    blob = os.urandom(2 << 20)
    assert transport.run(["cat"], stdin=blob).stdout == blob
    result = transport.run(["sh", "-c", "pwd; echo $GW; echo e >&2; exit 4"])
    assert (result.exit_status, result.stdout, result.stderr) == (
        4, f"{tmp_path}\n1\n".encode(), b"e\n")
    assert transport.run(["head", "-c", "3"], stdin=b"x" * (1 << 20)).stdout == b"xxx"
    missing = transport.run(["no-such-program-gw"])
    assert missing.exit_status == 127 and b"no-such-program-gw" in missing.stderr
    plain = tmp_path / "not-executable"
    plain.write_text("echo\n")
    assert transport.run([str(plain)]).exit_status == 126


def test_timeout_kills_the_process_group() -> None:
    tag = f"{uuid.uuid4().int % 10**6}.{os.getpid() % 1000}"
    first, second = f"sleep 3{tag}", f"sleep 4{tag}"
    with pytest.raises(CommandTimeout) as caught:
        LocalTransport().run(["sh", "-c", f"{first} & {second}"], timeout=0.5)
    assert caught.value.transient and isinstance(caught.value, SiteUnavailable)
    wait_for("the group to be gone",
             lambda: not processes_matching(first) and not processes_matching(second))


def test_output_cap() -> None:
    with pytest.raises(OutputTooLarge) as caught:
        LocalTransport(max_output_bytes=10_000).run(["yes"])
    assert not caught.value.transient and caught.value.limit == 10_000


def test_put_and_read(tmp_path: Path) -> None:
    transport = LocalTransport()
    path = tmp_path / "script.sh"
    transport.put_bytes(b"#!/bin/sh\n", str(path), mode=0o750)
    assert stat.S_IMODE(path.stat().st_mode) == 0o750 and path.read_bytes() == b"#!/bin/sh\n"
    transport.put_bytes(b"0123456789", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert transport.read_bytes(str(path), 2, 3) == (b"234", 10)
    assert transport.read_bytes(str(path), 20) == (b"", 10)
    # Past the largest offset the file system allows, seeking fails: still nothing to read.
    assert transport.read_bytes(str(path), 2**62) == (b"", 10)
    assert transport.read_bytes(str(tmp_path / "absent")) == (b"", None)
    assert [p.name for p in tmp_path.iterdir()] == ["script.sh"]
    with pytest.raises(FileTransferError):
        transport.put_bytes(b"x", str(tmp_path / "no" / "dir"))
    with pytest.raises(FileTransferError):
        transport.read_bytes(str(tmp_path))
    with pytest.raises(ValueError):
        transport.read_bytes(str(path), -1)
