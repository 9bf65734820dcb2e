"""A small SFTP (version 3) client over any connected byte stream, for bulk transfers.

Speaks draft-ietf-secsh-filexfer-02, the version OpenSSH's sftp-server implements, over
a socket whose far end is an SFTP server: in gridgate the stdin/stdout of an OpenSSH
`ssh -s ... sftp` process (adapters.ssh.openssh.bulk), in tests a local `sftp-server`.

Only what bulk copies need: open, fstat, fsetstat (mode, size), close, and pipelined
READ/WRITE with a sliding window. A window keeps up to `window` requests in flight and
reads one reply before sending the next, so the pipe never drains; paramiko's
SFTPFile instead waits for every outstanding reply once it has 100, which empties the
pipeline each time. Data goes out with `sendmsg` (header and payload as two buffers),
never concatenated.

OpenSSH's sftp-server handles one request at a time in arrival order, so writes sent on
one session land in offset order.
"""

from __future__ import annotations

import os
import select
import socket
import stat
import struct
from collections import deque
from collections.abc import Callable
from typing import IO

# Packet types (filexfer-02 section 3).
_INIT, _VERSION, _OPEN, _CLOSE, _READ, _WRITE = 1, 2, 3, 4, 5, 6
_FSTAT, _FSETSTAT = 8, 10
_STATUS, _HANDLE, _DATA, _ATTRS = 101, 102, 103, 105
# Open flags.
OPEN_READ, OPEN_WRITE, OPEN_CREATE, OPEN_TRUNCATE = 0x01, 0x02, 0x08, 0x10
# Attribute flags.
_ATTR_SIZE, _ATTR_PERMISSIONS = 0x1, 0x4
# Status codes.
STATUS_OK, STATUS_EOF, STATUS_NO_SUCH_FILE = 0, 1, 2

# OpenSSH's sftp-server reads messages of up to 256 KiB and returns at most 255 KiB per
# READ (SFTP_MAX_READ_LENGTH); 255 KiB requests are the largest both directions accept.
REQUEST_BYTES = 255 << 10
# Requests in flight per session: 16 x 255 KiB = ~4 MiB, past sshd's 2 MiB channel window.
WINDOW = 16
# Replies longer than this are a protocol error (a DATA reply is REQUEST_BYTES + header).
_MAX_REPLY_BYTES = 1 << 20

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


class SftpError(Exception):
    """The server answered a request with a failure status (or broke the protocol)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class SftpSession:
    """One SFTP session on `sock` (blocking, with the socket's timeout per call)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._next_id = 0
        self._send(struct.pack(">IBI", 5, _INIT, 3))
        kind, payload = self._read_packet()
        if kind != _VERSION:
            raise SftpError(f"expected SSH_FXP_VERSION, got packet type {kind}")
        if _U32.unpack_from(payload)[0] < 3:
            raise SftpError("the server speaks an SFTP version older than 3")

    # --- file handles ---------------------------------------------------------------

    def open(self, path: str, flags: int) -> bytes:
        """Open `path` (OPEN_* flags); the handle. New files are created 0600."""
        return self.wait_handle(self.send_open(path, flags))

    def send_open(self, path: str, flags: int) -> int:
        """Send an OPEN without waiting; its request id (see `wait_handle`)."""
        body = _string(path.encode()) + _U32.pack(flags) + _attrs(mode=0o600)
        return self._request(_OPEN, body)

    def wait_handle(self, req: int) -> bytes:
        """The handle an OPEN sent by `send_open` gave."""
        return self._expect_handle(req)

    def close(self, handle: bytes) -> None:
        self._expect_ok(self.send_close(handle))

    def send_close(self, handle: bytes) -> int:
        """Send a CLOSE without waiting; its request id (see `wait_ok`)."""
        return self._request(_CLOSE, _string(handle))

    def wait_ok(self, req: int) -> None:
        """Wait for the reply to `req`; SftpError unless it is a success."""
        self._expect_ok(req)

    def size(self, handle: bytes) -> int:
        kind, payload = self._reply(self._request(_FSTAT, _string(handle)))
        if kind != _ATTRS:
            raise _status_error(kind, payload)
        flags = _U32.unpack_from(payload)[0]
        if not flags & _ATTR_SIZE:
            raise SftpError("the server did not report the file's size")
        return int(_U64.unpack_from(payload, 4)[0])

    def set_mode(self, handle: bytes, mode: int) -> None:
        self._expect_ok(self._request(_FSETSTAT, _string(handle) + _attrs(mode=mode)))

    def truncate(self, handle: bytes, size: int) -> None:
        self._expect_ok(self._request(_FSETSTAT, _string(handle) + _attrs(size=size)))

    # --- pipelined data ------------------------------------------------------------

    def send_write(self, handle: bytes, offset: int, data: bytes | memoryview) -> int:
        """Send one WRITE without waiting; its request id (see `wait_write`)."""
        req = self._take_id()
        head = struct.pack(">IBI", 1 + 4 + 4 + len(handle) + 8 + 4 + len(data), _WRITE, req)
        self._send(head, _string(handle), _U64.pack(offset), _U32.pack(len(data)), data)
        return req

    def send_write_file(self, handle: bytes, offset: int, fd: int, pos: int, n: int) -> int:
        """`send_write` of `n` bytes of the regular file `fd` from `pos`, sent with
        sendfile(2): they never pass through this process (no read and send copies)."""
        req = self._take_id()
        head = struct.pack(">IBI", 1 + 4 + 4 + len(handle) + 8 + 4 + n, _WRITE, req)
        self._send(head, _string(handle), _U64.pack(offset), _U32.pack(n))
        while n:
            try:
                k = os.sendfile(self.sock.fileno(), fd, pos, n)
            except BlockingIOError:  # the socket (non-blocking: it has a timeout) is full
                if not select.select([], [self.sock], [], self.sock.gettimeout())[1]:
                    raise TimeoutError("the SFTP server stopped reading") from None
                continue
            if k == 0:
                raise EOFError("the file ended before the bytes its request announced")
            pos, n = pos + k, n - k
        return req

    def wait_write(self, req: int) -> None:
        self._expect_ok(req)

    def send_read(self, handle: bytes, offset: int, length: int) -> int:
        """Send one READ without waiting; its request id (see `wait_read`)."""
        return self._request(_READ, _string(handle) + _U64.pack(offset) + _U32.pack(length))

    def wait_read(self, req: int) -> bytes:
        """The data of a READ; b"" at end of file."""
        kind, payload = self._reply(req)
        if kind == _DATA:
            length = _U32.unpack_from(payload)[0]
            return bytes(payload[4:4 + length])
        if kind == _STATUS and _U32.unpack_from(payload)[0] == STATUS_EOF:
            return b""
        raise _status_error(kind, payload)

    # --- framing -------------------------------------------------------------------

    def _take_id(self) -> int:
        req = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF
        return req

    def _request(self, kind: int, body: bytes) -> int:
        req = self._take_id()
        self._send(struct.pack(">IBI", 1 + 4 + len(body), kind, req), body)
        return req

    def _reply(self, req: int) -> tuple[int, memoryview]:
        """The reply to `req`; sftp-server answers in request order, so it is the next."""
        kind, payload = self._read_packet()
        got = _U32.unpack_from(payload)[0]
        if got != req:
            raise SftpError(f"reply to request {got} arrived while waiting for {req}")
        return kind, payload[4:]

    def _expect_ok(self, req: int) -> None:
        kind, payload = self._reply(req)
        if kind != _STATUS or _U32.unpack_from(payload)[0] != STATUS_OK:
            raise _status_error(kind, payload)

    def _expect_handle(self, req: int) -> bytes:
        kind, payload = self._reply(req)
        if kind != _HANDLE:
            raise _status_error(kind, payload)
        length = _U32.unpack_from(payload)[0]
        return bytes(payload[4:4 + length])

    def _send(self, *parts: bytes | memoryview) -> None:
        views = [memoryview(p) for p in parts]
        while views:
            sent = self.sock.sendmsg(views)
            if sent <= 0:
                raise EOFError("the SFTP server closed the connection")
            while views and sent >= len(views[0]):
                sent -= len(views[0])
                views.pop(0)
            if views and sent:
                views[0] = views[0][sent:]

    def _read_packet(self) -> tuple[int, memoryview]:
        length = _U32.unpack(self._recv_exact(4))[0]
        if not 1 <= length <= _MAX_REPLY_BYTES:
            raise SftpError(f"SFTP reply of {length} bytes; the stream is out of step")
        packet = memoryview(self._recv_exact(length))
        return packet[0], packet[1:]

    def _recv_exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise EOFError("the SFTP server closed the connection")
            got += k
        return buf


def _string(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def _attrs(*, mode: int | None = None, size: int | None = None) -> bytes:
    flags, body = 0, b""
    if size is not None:
        flags |= _ATTR_SIZE
        body += _U64.pack(size)
    if mode is not None:
        flags |= _ATTR_PERMISSIONS
        body += _U32.pack(mode)
    return _U32.pack(flags) + body


def _status_error(kind: int, payload: memoryview) -> SftpError:
    if kind != _STATUS:
        return SftpError(f"unexpected SFTP reply type {kind}")
    code = _U32.unpack_from(payload)[0]
    length = _U32.unpack_from(payload, 4)[0]
    text = bytes(payload[8:8 + length]).decode(errors="replace") or f"status {code}"
    return SftpError(text, code)


# --- windowed copies -----------------------------------------------------------------


def write_striped(
    sessions: list[tuple[SftpSession, bytes]],
    src: IO[bytes],
    offset: int,
    length: int | None,
    progress: Callable[[int], None] | None = None,
    *,
    request_bytes: int = REQUEST_BYTES,
    window: int = WINDOW,
) -> int:
    """Write `src` from where it stands into the open handles, from `offset`; the bytes
    written, once all are acknowledged. Request i goes to session i mod n, so n sessions
    carry alternate 255 KiB stripes in parallel; `progress(n)` follows the bytes sent.

    A session waits only on its own replies, but every session gets every n-th request
    in turn, so none runs more than `window` requests ahead of the others (see
    `reorder_bytes`). The last request (when the end is known: a `length` or a file's
    end) goes once every other one is acknowledged, so a reader on the site that sees the
    file at its full size sees all of it (adapters.transfer.follow).
    """
    inflight: list[deque[int]] = [deque() for _ in sessions]
    fd = _regular_file(src)
    pos, end = (src.tell(), os.fstat(fd).st_size) if fd is not None else (0, 0)
    sent = seq = 0
    while length is None or sent < length:
        want = request_bytes if length is None else min(request_bytes, length - sent)
        k = seq % len(sessions)
        session, handle = sessions[k]
        if fd is not None:
            n = min(want, end - pos)
            if n <= 0:
                break
        else:
            data = src.read(want)
            if not data:
                break
            n = len(data)
        last = (sent + n == length) or (fd is not None and pos + n == end)
        if last:  # once all else is written: a file of full size then holds all of it
            for (other, _h), pending in zip(sessions, inflight, strict=True):
                while pending:
                    other.wait_write(pending.popleft())
        if len(inflight[k]) >= window:
            session.wait_write(inflight[k].popleft())
        if fd is not None:
            inflight[k].append(session.send_write_file(handle, offset + sent, fd, pos, n))
            pos += n
        else:
            inflight[k].append(session.send_write(handle, offset + sent, data))
        sent += n
        seq += 1
        if progress is not None:
            progress(sent)
    if fd is not None:
        src.seek(pos)  # the stream stands after what was sent, as if read
    for (session, _handle), pending in zip(sessions, inflight, strict=True):
        while pending:
            session.wait_write(pending.popleft())
    return sent


def _regular_file(src: IO[bytes]) -> int | None:
    """The descriptor of `src` when it is a regular file (sent by sendfile), else None."""
    try:
        fd = src.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError):  # no descriptor (io.UnsupportedOperation)
        return None


def reorder_bytes(streams: int, *, request_bytes: int = REQUEST_BYTES,
                  window: int = WINDOW) -> int:
    """After `write_striped` over `streams` sessions is cut off, every byte below the
    file's size minus this many has been written (the sessions' windows, one request
    each more, and the last request's own length). One session's writes land in order:
    the file is a prefix of what was sent."""
    if streams <= 1:
        return 0
    return (streams * (window + 1) + 1) * request_bytes


def open_all(sessions: list[SftpSession], path: str, flags: int) -> list[bytes]:
    """`path` opened on every session: the OPENs sent together, one round trip in all."""
    sent = [session.send_open(path, flags) for session in sessions]
    return [session.wait_handle(req) for session, req in zip(sessions, sent, strict=True)]


def read_striped(
    sessions: list[tuple[SftpSession, bytes]],
    offset: int,
    end: int,
    write: Callable[[bytes], object],
    progress: Callable[[int], None] | None = None,
    *,
    request_bytes: int = REQUEST_BYTES,
    window: int = WINDOW,
) -> int:
    """Copy bytes [offset, end) of the open handles to `write`, in order; the bytes
    copied (fewer if the file ends first). READ i goes to session i mod n, up to `window`
    in flight on each, so n sessions fetch alternate stripes in parallel; the replies are
    taken in the order of the file."""
    inflight: deque[tuple[int, int, int, int]] = deque()  # (session, request, at, length)
    pos, done, seq = offset, 0, 0
    while pos < end or inflight:
        while pos < end and len(inflight) < window * len(sessions):
            k = seq % len(sessions)
            session, handle = sessions[k]
            n = min(request_bytes, end - pos)
            inflight.append((k, session.send_read(handle, pos, n), pos, n))
            pos += n
            seq += 1
        k, req, at, n = inflight.popleft()
        data = sessions[k][0].wait_read(req)
        if data:
            write(data)
            done += len(data)
            if progress is not None:
                progress(done)
        if len(data) < n:
            # End of file, or a server that sent less than asked: drop the reads after
            # this one and go on from where the data stopped (b"" next time means EOF).
            for later, later_req, _at, _n in inflight:
                sessions[later][0].wait_read(later_req)
            inflight.clear()
            if not data:
                break
            pos = at + len(data)
    return done
