"""Large copies through OpenSSH `ssh` processes (adapters.ssh.openssh.bulk) against a real sshd
on 127.0.0.1: striped uploads, downloads, pinned host keys, a link cut mid-copy, and the
standing master connection the sessions ride (and its end when idle)."""

from __future__ import annotations

import logging
import os
import pwd
import stat
from pathlib import Path

import pytest

from adapters.errors import SiteUnavailable
from adapters.ssh import SshTransport
from adapters.ssh.openssh import master as master_module
from adapters.ssh.transport import BULK_MIN_BYTES
from adapters.transport import HostKeyMismatch
from tests.ssh.conftest import target_for, wait_for
from tests.ssh.sshd import Sshd, keygen

MIB = 1 << 20


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    data = os.urandom(BULK_MIN_BYTES + 5 * MIB + 17)
    path = tmp_path_factory.mktemp("bulk") / "big.bin"
    path.write_bytes(data)
    return path, data


def test_large_files_go_through_openssh_both_ways(transport: SshTransport, remote_dir: Path,
                                                  big: tuple[Path, bytes],
                                                  tmp_path: Path) -> None:
    source, data = big
    assert transport.bulk is not None and transport.bulk.streams == 2
    remote = remote_dir / "in.bin"
    seen: list[int] = []
    assert transport.upload(str(source), str(remote), mode=0o600, progress=seen.append) \
        == len(data)
    assert remote.read_bytes() == data
    info = remote.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == pwd.getpwnam("gwtest").pw_uid
    assert seen == sorted(seen) and seen[-1] == len(data)
    assert transport.bulk.connects == 2  # two striped streams, one ssh process each
    back = tmp_path / "back.bin"
    assert transport.download(str(remote), str(back)) == len(data)
    assert back.read_bytes() == data
    assert transport.bulk.connects == 4  # a download is striped too
    # A small file stays on the pooled paramiko connection.
    transport.upload(str(source), str(remote_dir / "small.bin"), length=MIB)
    assert transport.bulk.connects == 4 and transport.connects == 1


def test_upload_at_an_offset_cuts_the_stale_tail_first(transport: SshTransport,
                                                       remote_dir: Path,
                                                       big: tuple[Path, bytes]) -> None:
    source, data = big
    remote = remote_dir / "partial.bin"
    have = 4 * MIB + 3  # what an earlier attempt left; the rest is still a bulk copy
    remote.write_bytes(data[:have] + b"garbage past the offset" * 1000)
    user = pwd.getpwnam("gwtest")
    os.chown(remote, user.pw_uid, user.pw_gid)
    assert transport.upload(str(source), str(remote), offset=have) == len(data) - have
    assert transport.bulk is not None and transport.bulk.connects == 2
    assert remote.read_bytes() == data


def test_a_wrong_pinned_key_sends_nothing(sshd: Sshd, remote_dir: Path,
                                          big: tuple[Path, bytes], tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    other = keygen(tmp_path / "other_host_key")
    source, _ = big
    t = SshTransport(target_for(sshd, host_keys=(other,)))
    try:
        with caplog.at_level(logging.WARNING, "adapters.ssh"), \
                pytest.raises(HostKeyMismatch):
            t.upload(str(source), str(remote_dir / "never.bin"))
    finally:
        t.close()
    assert "Host key verification failed" in caplog.text  # OpenSSH refused it too
    assert not (remote_dir / "never.bin").exists()


def test_a_cut_link_leaves_every_byte_below_the_reorder_bound(transport: SshTransport,
                                                              remote_dir: Path,
                                                              big: tuple[Path, bytes]) -> None:
    source, data = big
    remote = remote_dir / "cut.bin"
    cut: list[int] = []

    def progress(done: int) -> None:
        if done >= len(data) // 3 and not cut:
            cut.append(done)
            transport.disconnect()

    with pytest.raises(SiteUnavailable):
        transport.upload(str(source), str(remote), progress=progress)
    assert cut
    got = remote.read_bytes()
    assert 0 < len(got) < len(data)  # some of what was sent had landed
    safe = max(0, len(got) - transport.write_reorder_bytes)
    assert got[:safe] == data[:safe]


def test_bulk_streams_0_keeps_everything_on_paramiko(sshd: Sshd, remote_dir: Path,
                                                     big: tuple[Path, bytes]) -> None:
    source, data = big
    t = SshTransport(target_for(sshd, bulk_streams=0))
    try:
        assert t.bulk is None and t.write_reorder_bytes == 0
        t.upload(str(source), str(remote_dir / "p.bin"))
    finally:
        t.close()
    assert (remote_dir / "p.bin").read_bytes() == data


def test_an_upload_takes_the_processes_started_ahead_of_it(transport: SshTransport,
                                                           remote_dir: Path,
                                                           big: tuple[Path, bytes]) -> None:
    """Started ahead, the `ssh` processes serve the upload (none more are started); ones
    no upload took are ended with the context; small uploads start none. The first
    upload_ahead starts the master only: its upload waits for it, then rides it."""
    source, data = big
    bulk = transport.bulk
    assert bulk is not None
    with transport.upload_ahead(len(data)):
        assert bulk.connects == 0 and bulk.master.starts == 1
        assert transport.upload(str(source), str(remote_dir / "m.bin")) == len(data)
    assert bulk.connects == 2
    with transport.upload_ahead(len(data)):
        assert bulk.connects == 4
        assert transport.upload(str(source), str(remote_dir / "a.bin")) == len(data)
    assert bulk.connects == 4 and (remote_dir / "a.bin").read_bytes() == data
    with transport.upload_ahead(len(data)):
        assert bulk.connects == 6
        live = set(bulk._live)
        assert len(live) == 2
    wait_for("the unused processes to end", lambda: not bulk._live)
    assert all(proc.poll() is not None for proc in live)
    with transport.upload_ahead(MIB):
        assert bulk.connects == 6


def _ended(pid: int) -> bool:
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


def test_copies_ride_one_standing_connection(sshd: Sshd, transport: SshTransport,
                                             remote_dir: Path, big: tuple[Path, bytes],
                                             tmp_path: Path) -> None:
    """After the first copy starts the master, copies open sessions over it: sshd accepts
    no new login for them. `disconnect` ends the master; the next copy connects again."""
    source, data = big
    bulk = transport.bulk
    assert bulk is not None
    assert transport.upload(str(source), str(remote_dir / "first.bin")) == len(data)
    wait_for("the master connection", lambda: os.path.exists(bulk._control_path()))
    # The pooled paramiko connection (a download asks it the file's size) is up too.
    assert transport.download(str(remote_dir / "first.bin"), str(tmp_path / "b")) == len(data)
    logins = sshd.log().count("Accepted publickey")
    for n in range(3):  # more sessions in all than one connection's MaxSessions
        assert transport.upload(str(source), str(remote_dir / f"{n}.bin")) == len(data)
    assert transport.download(str(remote_dir / "0.bin"), str(tmp_path / "back")) == len(data)
    assert sshd.log().count("Accepted publickey") == logins
    pid = bulk.master.pid()
    assert pid is not None and Path(f"/proc/{pid}").exists()
    assert (tmp_path / "back").read_bytes() == data
    assert (remote_dir / "2.bin").read_bytes() == data
    transport.disconnect()
    wait_for("the master to end", lambda: _ended(pid))
    assert transport.upload(str(source), str(remote_dir / "again.bin")) == len(data)
    assert sshd.log().count("Accepted publickey") > logins
    assert (remote_dir / "again.bin").read_bytes() == data


def test_an_idle_master_ends_by_itself_and_the_next_copy_starts_another(
        sshd: Sshd, remote_dir: Path, big: tuple[Path, bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ControlPersist: a master unused for MASTER_IDLE_SECONDS exits on its own (as it
    does when the gateway that started it died), and a later copy starts a new one."""
    monkeypatch.setattr(master_module, "MASTER_IDLE_SECONDS", 1)
    source, data = big
    t = SshTransport(target_for(sshd))
    try:
        bulk = t.bulk
        assert bulk is not None
        assert t.upload(str(source), str(remote_dir / "a.bin")) == len(data)
        control = bulk._control_path()
        # Not the socket: an idle master may be gone again before a loaded machine
        # runs the test's next line (CI saw it); its start is a fact that stays.
        wait_for("the master to start", bulk.master.started)
        wait_for("the idle master to exit", lambda: not os.path.exists(control))
        assert t.upload(str(source), str(remote_dir / "b.bin")) == len(data)
        assert bulk.master.starts == 2
        assert (remote_dir / "b.bin").read_bytes() == data
    finally:
        t.close()
    assert not os.path.exists(control)  # close ended the second one
