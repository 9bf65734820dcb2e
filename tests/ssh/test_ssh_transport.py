"""SshTransport against a real OpenSSH sshd on 127.0.0.1 (tests/ssh/sshd.py)."""

from __future__ import annotations

import logging
import os
import pwd
import re
import stat
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from adapters.errors import SiteUnavailable
from adapters.ssh import SshTransport
from adapters.ssh.hostkeys import HostKey
from adapters.transport import (
    AuthenticationFailed,
    CommandTimeout,
    FileTransferError,
    HostKeyMismatch,
    InvalidCommand,
    OutputTooLarge,
)
from tests.ssh.conftest import HOSTILE, processes_matching, target_for, wait_for
from tests.ssh.sshd import Sshd, keygen


def keygen_fingerprint(public_line: str, tmp_path: Path) -> str:
    """The fingerprint OpenSSH's own ssh-keygen prints for a public key."""
    pub = tmp_path / f"k{uuid.uuid4().hex[:6]}.pub"
    pub.write_text(public_line + "\n")
    out = subprocess.run(["ssh-keygen", "-l", "-f", str(pub)], capture_output=True, text=True,
                         check=True).stdout
    return out.split()[1]


# --- commands ---------------------------------------------------------------------------


def test_runs_as_the_target_user(transport: SshTransport, sshd: Sshd) -> None:
    result = transport.run(["id", "-u"])
    assert result.exit_status == 0
    assert result.stdout.decode().strip() == str(pwd.getpwnam(sshd.user).pw_uid)
    assert result.argv == ("id", "-u")


def test_hostile_argv_arrives_literally_and_nothing_runs(transport: SshTransport) -> None:
    marker = f"/tmp/pwned-{uuid.uuid4().hex}"
    args = [arg.format(marker=marker) for arg in HOSTILE]
    existed = os.path.exists("/tmp/pwned")
    result = transport.run(["printf", r"%s\0", *args])
    assert result.exit_status == 0, result.stderr
    assert result.stdout.split(b"\0")[:-1] == [a.encode() for a in args]
    assert not os.path.exists(marker)
    assert os.path.exists("/tmp/pwned") == existed


def test_argv_must_be_a_list_of_strings(transport: SshTransport) -> None:
    with pytest.raises(InvalidCommand):
        transport.run("id -u")
    with pytest.raises(InvalidCommand):
        transport.run([])
    with pytest.raises(InvalidCommand):
        transport.run(["printf", "a\0b"])


def test_stdin_round_trip(transport: SshTransport) -> None:
    script = b"#!/bin/bash\n#SBATCH -J gw-x\necho 'hi'\n"
    assert transport.run(["cat"], stdin=script).stdout == script
    # Bigger than the SSH window, binary, both directions at once.
    blob = os.urandom(3 << 20)
    result = transport.run(["sh", "-c", "cat; echo done >&2"], stdin=blob)
    assert result.stdout == blob
    assert result.stderr == b"done\n"


def test_command_that_ignores_stdin(transport: SshTransport) -> None:
    result = transport.run(["sh", "-c", "head -c 10 >/dev/null; echo ok"],
                           stdin=b"x" * (4 << 20))
    assert (result.exit_status, result.stdout) == (0, b"ok\n")


def test_exit_status_and_streams(transport: SshTransport) -> None:
    result = transport.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (result.exit_status, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
    missing = transport.run(["no-such-command-gw"])
    assert missing.exit_status == 127
    assert b"no-such-command-gw" in missing.stderr


def test_timeout_kills_the_remote_process_group(transport: SshTransport) -> None:
    tag = f"{uuid.uuid4().int % 10**6}.{os.getpid() % 1000}"
    first, second = f"sleep 1{tag}", f"sleep 2{tag}"
    with pytest.raises(CommandTimeout) as caught:
        transport.run(["sh", "-c", f"{first} & {second}"], timeout=1.0)
    assert caught.value.transient
    assert isinstance(caught.value, SiteUnavailable)
    assert "did not finish within 1 s" in caught.value.message
    wait_for("the timed-out command's processes to be gone",
             lambda: not processes_matching(first) and not processes_matching(second))
    # The pooled connection is still good.
    assert transport.run(["true"]).exit_status == 0
    assert transport.connects == 1


def test_output_cap(sshd: Sshd) -> None:
    transport = SshTransport(target_for(sshd, max_output_bytes=64 * 1024))
    try:
        tag = uuid.uuid4().hex[:8]
        with pytest.raises(OutputTooLarge) as caught:
            transport.run(["sh", "-c", f"yes {tag}"], timeout=30)
        assert not caught.value.transient
        assert caught.value.limit == 64 * 1024
        assert "wrote more than 65536 bytes" in caught.value.message
        wait_for("the chatty command to be gone", lambda: not processes_matching(f"yes {tag}"))
        assert len(transport.run(["head", "-c", "60000", "/dev/zero"]).stdout) == 60000
    finally:
        transport.close()


def test_pooled_connection_serves_100_commands(fresh_sshd: Sshd) -> None:
    transport = SshTransport(target_for(fresh_sshd))
    try:
        for _ in range(100):
            assert transport.run(["true"]).exit_status == 0
        assert transport.connects == 1
        assert fresh_sshd.count("Accepted publickey for") == 1
        assert fresh_sshd.count("Starting session: command") == 100
    finally:
        transport.close()


def test_concurrent_commands_share_the_connection(fresh_sshd: Sshd) -> None:
    # Commands that end while we still send (stdin) or receive (window adjusts), on one
    # connection from many threads: once made paramiko send after its CLOSE, and sshd
    # dropped the connection (paramiko#1115; see the workaround in the transport).
    for _ in range(3):
        transport = SshTransport(target_for(fresh_sshd, max_sessions=6))
        errors: list[BaseException] = []
        outputs: list[bytes] = []

        def work(n: int, transport: SshTransport = transport) -> None:
            try:
                for i in range(5):
                    if n % 3 == 0:
                        result = transport.run(["head", "-c", "3"], stdin=b"x" * 300_000)
                        outputs.append(result.stdout)
                    elif n % 3 == 1:
                        result = transport.run(["head", "-c", "400000", "/dev/zero"])
                        outputs.append(result.stdout[:3])
                    else:
                        outputs.append(transport.run(["printf", "%s", f"{n}-{i}"]).stdout)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        transport.close()
        assert not errors
        assert sorted(outputs) == sorted(
            [b"xxx"] * 20 + [b"\0\0\0"] * 20
            + [f"{n}-{i}".encode() for n in range(2, 12, 3) for i in range(5)])
        assert transport.connects == 1
    assert fresh_sshd.count("Accepted publickey for") == 3
    assert fresh_sshd.count("Disconnecting") == 0


# --- host keys and authentication -----------------------------------------------------


def test_wrong_pinned_key_is_refused_before_authentication(
    fresh_sshd: Sshd, tmp_path: Path
) -> None:
    wrong = keygen(tmp_path / "wrong_host_key")
    transport = SshTransport(target_for(fresh_sshd, host_keys=(wrong,), site="roadrunner"))
    with pytest.raises(HostKeyMismatch) as caught:
        transport.run(["touch", "/tmp/should-not-run"])
    error = caught.value
    assert not error.transient and not isinstance(error, SiteUnavailable)
    offered = keygen_fingerprint(fresh_sshd.host_key_line, tmp_path)
    expected = keygen_fingerprint(wrong, tmp_path)
    assert error.offered == f"ssh-ed25519 {offered}"
    assert error.expected == (f"ssh-ed25519 {expected}",)
    assert "roadrunner" in error.message and offered in error.message
    assert expected in error.message and "Refused before authenticating" in error.message
    assert (error.host, error.port) == ("127.0.0.1", fresh_sshd.port)
    # sshd saw a connection that ended before any authentication request. Only ours got
    # as far as key exchange ([preauth]): the fixture's readiness probe closes before
    # the banner. sshd says "Connection closed by" or, when our close finds data unread,
    # "Connection reset by" (about half the time here). (Picking ours by the last
    # "Connection from" line raced: each connection is logged by its own re-executed
    # child, so under load the probe's line came last.)
    ours = wait_for("sshd to log the refused connection",
                    lambda: [line for line in fresh_sshd.log().splitlines()
                             if re.fullmatch(r"Connection (closed|reset) by 127\.0\.0\.1 "
                                             r"port \d+ \[preauth\]", line)])
    assert len(ours) == 1
    assert fresh_sshd.count("publickey") == 0
    assert fresh_sshd.count("userauth") == 0
    assert transport.connects == 0
    # Every call checks again, and again refuses.
    with pytest.raises(HostKeyMismatch):
        transport.run(["true"])
    assert fresh_sshd.count("publickey") == 0


def test_pinned_key_of_another_type_is_a_mismatch(sshd: Sshd, tmp_path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(tmp_path / "ec")],
                   check=True)
    ecdsa = " ".join((tmp_path / "ec.pub").read_text().split()[:2])
    transport = SshTransport(target_for(sshd, host_keys=(ecdsa,)))
    with pytest.raises(HostKeyMismatch) as caught:
        transport.run(["true"])
    assert caught.value.offered.startswith("ssh-ed25519 SHA256:")
    assert caught.value.expected[0].startswith("ecdsa-sha2-nistp256 SHA256:")


def test_any_of_several_pins_is_accepted(sshd: Sshd, tmp_path: Path) -> None:
    old = keygen(tmp_path / "old_host_key")
    transport = SshTransport(target_for(sshd, host_keys=(old, sshd.host_key_line)))
    try:
        assert transport.run(["true"]).exit_status == 0
    finally:
        transport.close()


def test_refused_key_is_authentication_failed(sshd: Sshd, tmp_path: Path) -> None:
    keygen(tmp_path / "stranger")
    transport = SshTransport(target_for(sshd, key_path=str(tmp_path / "stranger")))
    with pytest.raises(AuthenticationFailed) as caught:
        transport.run(["true"])
    assert not caught.value.transient
    assert str(tmp_path / "stranger") in caught.value.message


def test_missing_key_file_is_reported_without_connecting(sshd: Sshd, tmp_path: Path) -> None:
    transport = SshTransport(target_for(sshd, key_path=str(tmp_path / "absent")))
    before = sshd.count("Connection from")
    with pytest.raises(AuthenticationFailed, match="cannot read the SSH private key"):
        transport.run(["true"])
    assert sshd.count("Connection from") == before
    assert transport.breaker.state().failures == 0


def test_key_given_as_bytes_is_never_shown(
    sshd: Sshd, caplog: pytest.LogCaptureFixture
) -> None:
    secret = sshd.client_key.read_bytes()
    body = b"".join(secret.splitlines()[1:-1]).decode()
    target = target_for(sshd, key_path=None, key_data=secret, key_passphrase="pw-never-shown")
    assert body[:20] not in repr(target) and "pw-never-shown" not in repr(target)
    caplog.set_level(logging.DEBUG)
    transport = SshTransport(target_for(sshd, key_path=None, key_data=secret))
    try:
        assert transport.run(["true"]).exit_status == 0
    finally:
        transport.close()
    for chunk in (body[i : i + 16] for i in range(0, len(body) - 16, 16)):
        assert chunk not in caplog.text


def test_host_key_fingerprint_matches_ssh_keygen(sshd: Sshd, tmp_path: Path) -> None:
    key = HostKey.parse(sshd.host_key_line + " a comment")
    assert key.fingerprint == keygen_fingerprint(sshd.host_key_line, tmp_path)
    assert key.line() == sshd.host_key_line


# --- files ------------------------------------------------------------------------------


def test_put_and_read_round_trip(transport: SshTransport, remote_dir: Path) -> None:
    path = remote_dir / "job.sh"
    data = os.urandom(300_000)
    transport.put_bytes(data, str(path), mode=0o640)
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o640
    assert info.st_uid == pwd.getpwnam("gwtest").pw_uid
    assert path.read_bytes() == data
    assert transport.read_bytes(str(path)) == (data, len(data))
    assert transport.read_bytes(str(path), 1000, 10) == (data[1000:1010], len(data))
    assert transport.read_bytes(str(path), len(data) + 5) == (b"", len(data))
    assert transport.read_bytes(str(remote_dir / "missing")) == (b"", None)
    # Replacing keeps it atomic: a new inode under the name, and no temporary file left.
    inode = info.st_ino
    transport.put_bytes(b"v2", str(path), mode=0o600)
    assert path.read_bytes() == b"v2" and path.stat().st_ino != inode
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in remote_dir.iterdir()) == ["job.sh"]
    assert transport.connects == 1


def test_file_errors_are_final(transport: SshTransport, remote_dir: Path) -> None:
    with pytest.raises(FileTransferError) as caught:
        transport.put_bytes(b"x", str(remote_dir / "no" / "dir.txt"))
    assert not caught.value.transient
    with pytest.raises(FileTransferError, match="Permission denied"):
        transport.put_bytes(b"x", "/root/gw-forbidden")
    with pytest.raises(FileTransferError, match="Permission denied"):
        transport.read_bytes("/root/.bashrc")
    assert sorted(remote_dir.iterdir()) == []
