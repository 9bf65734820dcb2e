"""The bulk SFTP client (adapters.ssh.openssh.sftp_wire) against OpenSSH's real sftp-server,
started on a socket pair (no SSH around it: the protocol alone)."""

from __future__ import annotations

import io
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.ssh.openssh.sftp_wire import (
    OPEN_CREATE,
    OPEN_READ,
    OPEN_TRUNCATE,
    OPEN_WRITE,
    STATUS_NO_SUCH_FILE,
    SftpError,
    SftpSession,
    open_all,
    read_striped,
    reorder_bytes,
    write_striped,
)
from tests.ssh.sshd import ensure_openssh

SFTP_SERVER = "/usr/lib/openssh/sftp-server"
KIB = 1 << 10


class Server:
    """One sftp-server process; `session` speaks to it."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen([SFTP_SERVER], stdin=theirs.fileno(),
                                     stdout=theirs.fileno(), stderr=subprocess.DEVNULL)
        theirs.close()
        ours.settimeout(20)
        self.sock = ours
        self.session = SftpSession(ours)

    def stop(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    ensure_openssh()
    made = [Server() for _ in range(3)]
    yield made
    for server in made:
        server.stop()


def test_striped_write_over_three_sessions_lands_every_byte(servers: list[Server],
                                                            tmp_path: Path) -> None:
    path = str(tmp_path / "out.bin")
    data = os.urandom(5 * 64 * KIB * 7 + 123)  # 35 stripes and a short last one
    first = servers[0].session
    handle = first.open(path, OPEN_WRITE | OPEN_CREATE | OPEN_TRUNCATE)
    first.set_mode(handle, 0o600)
    handles = [(first, handle)] + [(s.session, s.session.open(path, OPEN_WRITE))
                                   for s in servers[1:]]
    seen: list[int] = []
    written = write_striped(handles, io.BytesIO(data), 0, None, seen.append,
                            request_bytes=64 * KIB, window=2)
    for session, h in handles:
        session.close(h)
    assert written == len(data)
    assert Path(path).read_bytes() == data
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # Progress grows with every request and ends at the whole file.
    assert seen == sorted(seen) and len(seen) == 36 and seen[-1] == len(data)


def test_a_regular_file_is_sent_from_where_it_stands_by_sendfile(
        servers: list[Server], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file source goes by sendfile(2) (a full socket waits), from its position, and is
    left after what was sent; a length cuts it short, a file's end ends it."""
    data = os.urandom(300 * KIB + 7)
    source = tmp_path / "src.bin"
    source.write_bytes(data)
    calls: list[int] = []
    real = os.sendfile

    def counted(out: int, fd: int, pos: int | None, n: int) -> int:
        calls.append(n)
        return real(out, fd, pos, n)

    monkeypatch.setattr(os, "sendfile", counted)
    path = str(tmp_path / "out.bin")
    sessions = [s.session for s in servers[:2]]
    handle = sessions[0].open(path, OPEN_WRITE | OPEN_CREATE | OPEN_TRUNCATE)
    handles = [(sessions[0], handle), (sessions[1], sessions[1].open(path, OPEN_WRITE))]
    with open(source, "rb") as src:
        src.read(5)  # buffered: the file's own offset is past where the stream stands
        assert write_striped(handles, src, 0, 200 * KIB, request_bytes=16 * KIB) == 200 * KIB
        assert src.tell() == 5 + 200 * KIB
        assert write_striped(handles, src, 200 * KIB, None, request_bytes=16 * KIB) \
            == len(data) - 5 - 200 * KIB
        assert src.read() == b""
    for session, h in handles:
        session.close(h)
    assert Path(path).read_bytes() == data[5:]
    assert calls and sum(calls) >= len(data) - 5


def test_write_at_an_offset_with_a_length_and_truncate(servers: list[Server],
                                                       tmp_path: Path) -> None:
    path = tmp_path / "partial.bin"
    path.write_bytes(b"A" * 1000 + b"stale tail")
    session = servers[0].session
    handle = session.open(str(path), OPEN_WRITE)
    session.truncate(handle, 1000)
    src = io.BytesIO(b"B" * 5000)
    assert write_striped([(session, handle)], src, 1000, 3000, request_bytes=1024) == 3000
    assert session.size(handle) == 4000
    session.close(handle)
    assert path.read_bytes() == b"A" * 1000 + b"B" * 3000


@pytest.mark.parametrize("streams", [1, 3])
def test_striped_read_of_ranges_and_past_the_end(servers: list[Server], tmp_path: Path,
                                                 streams: int) -> None:
    path = tmp_path / "in.bin"
    data = os.urandom(300 * KIB + 7)
    path.write_bytes(data)
    sessions = [s.session for s in servers[:streams]]
    handles = list(zip(sessions, open_all(sessions, str(path), OPEN_READ), strict=True))
    assert sessions[0].size(handles[0][1]) == len(data)
    out = bytearray()
    seen: list[int] = []
    assert read_striped(handles, 0, len(data), out.extend, seen.append,
                        request_bytes=16 * KIB, window=4) == len(data)
    assert bytes(out) == data and seen[-1] == len(data)
    part = bytearray()
    read_striped(handles, 1000, 1000 + 70 * KIB, part.extend, request_bytes=16 * KIB)
    assert bytes(part) == data[1000:1000 + 70 * KIB]
    # Asking past the end stops at the end (the file is shorter than the caller thought),
    # and every session is left in step for what comes next.
    tail = bytearray()
    assert read_striped(handles, len(data) - 40 * KIB, len(data) + 100 * KIB, tail.extend,
                        request_bytes=16 * KIB) == 40 * KIB
    assert bytes(tail) == data[-40 * KIB:]
    for session, handle in handles:
        assert session.size(handle) == len(data)
        session.close(handle)


def test_refusals_carry_the_servers_status(servers: list[Server], tmp_path: Path) -> None:
    session = servers[0].session
    with pytest.raises(SftpError) as caught:
        session.open(str(tmp_path / "no" / "such" / "dir"), OPEN_WRITE | OPEN_CREATE)
    assert caught.value.code == STATUS_NO_SUCH_FILE
    # The session is still usable after a refusal.
    handle = session.open(str(tmp_path / "ok"), OPEN_WRITE | OPEN_CREATE)
    session.close(handle)


def test_a_server_that_goes_away_mid_copy_is_an_eof(servers: list[Server],
                                                    tmp_path: Path) -> None:
    server = servers[0]
    handle = server.session.open(str(tmp_path / "cut.bin"), OPEN_WRITE | OPEN_CREATE)
    server.proc.kill()
    server.proc.wait()
    with pytest.raises((EOFError, OSError)):
        write_striped([(server.session, handle)], io.BytesIO(os.urandom(4 << 20)), 0, None,
                      request_bytes=64 * KIB)


def test_reorder_bound_covers_every_session_window() -> None:
    # Two sessions of 16 requests each, plus one being read and the last one's length.
    assert reorder_bytes(2, request_bytes=100, window=16) == (2 * 17 + 1) * 100
    assert reorder_bytes(3, request_bytes=100, window=1) == 700
    assert reorder_bytes(1, request_bytes=100, window=16) == 0  # in order: a prefix
