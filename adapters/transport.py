"""How adapters reach a site: run an argv, put and read files. One protocol, two transports.

Scheduler adapters talk to a `Transport` only, so their builders and parsers are tested on
recorded outputs without sockets and the same adapters run live. `LocalTransport` (here)
runs argv on this machine without a shell; `adapters.ssh.SshTransport` runs it on a login
host over one pooled SSH connection.

Errors: every failure is an `AdapterError`. Connection trouble and timeouts are
`SiteUnavailable` (transient: `ConnectionFailed`, `CircuitOpen`, `CommandTimeout`); the rest
are final `TransportError`s (`HostKeyMismatch`, `AuthenticationFailed`, `OutputTooLarge`,
`FileTransferError`, `InvalidCommand`). A command that ran and exited non-zero is not an
error: its `CommandResult` says so.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Protocol

from adapters.errors import AdapterError, SiteUnavailable

# Past this much stdout + stderr a command is stopped: a scheduler query never needs more.
DEFAULT_MAX_OUTPUT_BYTES = 16 << 20
# Error messages show at most this much of a command line.
_SHOWN_COMMAND_CHARS = 200
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_status: int
    stdout: bytes
    stderr: bytes


class Transport(Protocol):
    """Runs commands and moves files on one site account."""

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """Run argv (each element shell-quoted on a remote side; never a raw shell string).

        Raises SiteUnavailable (transient) on connection failures and timeouts, and the
        TransportError subclasses documented in this module.
        """
        ...

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        """Write `data` to `path` atomically (temporary name, then rename) with `mode`."""
        ...

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        """Up to `limit` bytes from `offset`, and the file's total size (None if missing)."""
        ...

    def close(self) -> None:
        """Release connections; the transport is not used afterwards."""
        ...


# Called with the bytes moved so far by one upload/download call (not yet acknowledged).
Progress = Callable[[int], None]
# A local file to send: a path, or a readable binary stream (read from where it stands).
LocalSource = str | os.PathLike[str] | IO[bytes]
# Where received bytes go: a path (created or overwritten at `offset`), or a binary stream.
LocalSink = str | os.PathLike[str] | IO[bytes]
# Local file I/O moves this much per read/write call.
_FILE_CHUNK = 1 << 20


class FileTransport(Transport, Protocol):
    """A Transport that also streams whole files, resumably, with progress.

    A separate protocol (not new Transport methods) so that the many small Transports
    (recorded outputs in tests, counting wrappers) stay valid as they are.
    """

    @property
    def write_reorder_bytes(self) -> int:
        """How far an interrupted upload may be out of order: every byte below the
        file's size minus this many was written (0: the file is always a prefix)."""
        ...

    def upload(
        self, source: LocalSource, path: str, *, offset: int = 0, length: int | None = None,
        mode: int = 0o600, progress: Progress | None = None,
    ) -> int:
        """Write `source` into `path` from byte `offset`; return the bytes written.

        offset 0 creates or truncates `path` (with `mode`, set before any data). A larger
        offset continues an existing file: it is first cut to `offset` bytes, so a stale
        tail never survives. A path source is read from `offset`; a stream from where it
        stands. At most `length` bytes are sent (None: to the source's end).
        """
        ...

    def download(
        self, path: str, sink: LocalSink, *, offset: int = 0, length: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Copy `path` from byte `offset` (at most `length` bytes) into `sink`; the bytes copied.

        A path sink is opened for writing without truncation and written from `offset`.
        Raises FileTransferError if `path` is missing or unreadable.
        """
        ...


# --- errors ----------------------------------------------------------------------------
# `transient` is set on every class explicitly: the transient ones inherit from both
# TransportError and SiteUnavailable, and the first base in the MRO would otherwise win.


class TransportError(AdapterError):
    """Carrying a command or file to or from the site failed (not the scheduler's answer)."""

    transient = False


class InvalidCommand(TransportError):
    """The argv cannot be sent as given (empty, not strings, or a NUL byte)."""

    transient = False


class HostKeyMismatch(TransportError):
    """The server's host key is not one the site config pins. Nothing was authenticated."""

    transient = False

    def __init__(
        self, message: str, *, host: str, port: int, offered: str, expected: tuple[str, ...]
    ) -> None:
        super().__init__(message)
        self.host = host
        self.port = port
        # "<key type> SHA256:<fingerprint>" of what the server showed, and of the pins.
        self.offered = offered
        self.expected = expected


class AuthenticationFailed(TransportError):
    """The site refused our key, or the key could not be loaded."""

    transient = False


class OutputTooLarge(TransportError):
    """A command wrote more than the transport's output cap; it was stopped."""

    transient = False

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class FileTransferError(TransportError):
    """A file could not be written or read (permissions, missing directory, ...)."""

    transient = False

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ConnectionFailed(TransportError, SiteUnavailable):
    """The site could not be reached, or the connection broke. Try again later."""

    transient = True


class CircuitOpen(ConnectionFailed):
    """Recent attempts failed; calls fail fast until `retry_at` (wall clock, UTC)."""

    transient = True

    def __init__(self, message: str, *, site: str, since: datetime, retry_at: datetime) -> None:
        super().__init__(message)
        self.site = site
        self.since = since
        self.retry_at = retry_at


class CommandTimeout(TransportError, SiteUnavailable):
    """A command did not finish in time; its process (group) was killed. Try again later."""

    transient = True


# --- argv ------------------------------------------------------------------------------


def check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """The argv as a tuple, or InvalidCommand if it cannot be passed on faithfully."""
    if isinstance(argv, str | bytes):
        raise InvalidCommand("argv must be a sequence of strings, not one string")
    items = tuple(argv)
    if not items:
        raise InvalidCommand("argv is empty")
    for item in items:
        if not isinstance(item, str):
            raise InvalidCommand(f"argv element {item!r} is not a string")
        if "\0" in item:
            raise InvalidCommand("argv elements cannot contain NUL bytes")
    return items


def remote_command(argv: Sequence[str]) -> str:
    """The one string a remote POSIX shell receives: every element `shlex.quote`d."""
    return " ".join(shlex.quote(item) for item in check_argv(argv))


def shown(argv: Sequence[str]) -> str:
    """A command line for error messages, shortened."""
    text = " ".join(shlex.quote(item) for item in argv)
    if len(text) > _SHOWN_COMMAND_CHARS:
        return text[: _SHOWN_COMMAND_CHARS - 3] + "..."
    return text


def check_read_range(offset: int, limit: int) -> None:
    if offset < 0 or limit < 0:
        raise ValueError(f"offset and limit must be >= 0 (got {offset}, {limit})")


# --- local -----------------------------------------------------------------------------


class LocalTransport:
    """Runs argv on this machine with subprocess (no shell); files are local paths.

    Each command is its own session and process group, killed as a group on timeout or
    when its output passes `max_output_bytes`. A program that cannot be started gives
    exit status 127 (not found) or 126 (not executable), as a remote shell would.
    """

    def __init__(
        self,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        label: str = "local",
    ) -> None:
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.max_output_bytes = max_output_bytes
        self.label = label
        # Local uploads write in order: an interrupted one leaves a prefix.
        self.write_reorder_bytes = 0

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        items = check_argv(argv)
        try:
            proc = subprocess.Popen(
                items,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            return CommandResult(items, 127, b"", f"{items[0]}: {exc.strerror}\n".encode())
        except PermissionError as exc:
            return CommandResult(items, 126, b"", f"{items[0]}: {exc.strerror}\n".encode())
        try:
            stdout, stderr = self._communicate(proc, items, stdin, time.monotonic() + timeout)
        except BaseException:
            _kill_group(proc)
            raise
        _close_streams(proc)
        return CommandResult(items, proc.returncode, stdout, stderr)

    def _communicate(
        self, proc: subprocess.Popen[bytes], argv: tuple[str, ...], stdin: bytes | None,
        deadline: float,
    ) -> tuple[bytes, bytes]:
        assert proc.stdout is not None and proc.stderr is not None
        buffers: dict[int, bytearray] = {proc.stdout.fileno(): bytearray(),
                                         proc.stderr.fileno(): bytearray()}
        pending = memoryview(stdin or b"")
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            if proc.stdin is not None:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin, selectors.EVENT_WRITE)
            while sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._timed_out(argv)
                for key, _ in sel.select(remaining):
                    stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                    if stream is proc.stdin:
                        pending = _write_some(sel, stream, pending)
                        continue
                    chunk = os.read(stream.fileno(), _READ_CHUNK)
                    if not chunk:
                        sel.unregister(stream)
                        continue
                    buffers[stream.fileno()] += chunk
                    total = sum(len(b) for b in buffers.values())
                    if total > self.max_output_bytes:
                        raise OutputTooLarge(
                            f"`{shown(argv)}` on {self.label} wrote more than "
                            f"{self.max_output_bytes} bytes of output; it was stopped",
                            limit=self.max_output_bytes,
                        )
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise self._timed_out(argv) from None
        return bytes(buffers[proc.stdout.fileno()]), bytes(buffers[proc.stderr.fileno()])

    def _timed_out(self, argv: tuple[str, ...]) -> CommandTimeout:
        return CommandTimeout(
            f"`{shown(argv)}` on {self.label} did not finish in time; its process group "
            "was killed"
        )

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        directory, name = os.path.split(path)
        try:
            fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".tmp")
        except OSError as exc:
            raise FileTransferError(f"cannot write {path}: {exc.strerror}", path=path) from exc
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), mode)
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise FileTransferError(f"cannot write {path}: {exc.strerror}", path=path) from exc

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        check_read_range(offset, limit)
        try:
            with open(path, "rb") as src:
                size = os.fstat(src.fileno()).st_size
                if offset >= size:  # a seek past the file system's largest offset fails
                    return b"", size
                src.seek(offset)
                return src.read(limit), size
        except FileNotFoundError:
            return b"", None
        except OSError as exc:
            raise FileTransferError(f"cannot read {path}: {exc.strerror}", path=path) from exc

    def upload(
        self, source: LocalSource, path: str, *, offset: int = 0, length: int | None = None,
        mode: int = 0o600, progress: Progress | None = None,
    ) -> int:
        check_read_range(offset, length or 0)
        try:
            if offset == 0:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
                os.fchmod(fd, mode)
            else:
                fd = os.open(path, os.O_WRONLY)
                os.ftruncate(fd, offset)
        except OSError as exc:
            raise FileTransferError(f"cannot write {path}: {exc.strerror}", path=path) from exc
        with os.fdopen(fd, "wb") as out, open_source(source, offset) as src:
            out.seek(offset)
            try:
                return copy_stream(src, out.write, length, progress)
            except OSError as exc:
                raise FileTransferError(
                    f"cannot write {path}: {exc.strerror}", path=path) from exc

    def download(
        self, path: str, sink: LocalSink, *, offset: int = 0, length: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        check_read_range(offset, length or 0)
        try:
            src = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise FileTransferError(f"cannot read {path}: {exc.strerror}", path=path) from exc
        with src, open_sink(sink, offset) as out:
            src.seek(offset)
            try:
                return copy_stream(src, out.write, length, progress)
            except OSError as exc:
                raise FileTransferError(
                    f"cannot read {path}: {exc.strerror}", path=path) from exc

    def close(self) -> None:
        """Nothing to release."""


# --- local file helpers (shared with the SSH transport) --------------------------------


@contextlib.contextmanager
def open_source(source: LocalSource, offset: int) -> Iterator[IO[bytes]]:
    """`source` as a readable stream: a path opened at `offset`, a stream as it is."""
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as src:
            src.seek(offset)
            yield src
    else:
        yield source


@contextlib.contextmanager
def open_sink(sink: LocalSink, offset: int) -> Iterator[IO[bytes]]:
    """`sink` as a writable stream: a path created if missing (0600), cut and positioned
    at `offset`; a stream as it is."""
    if isinstance(sink, str | os.PathLike):
        fd = os.open(sink, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.truncate(offset)
            out.seek(offset)
            yield out
    else:
        yield sink


def copy_stream(
    src: IO[bytes], write: Callable[[bytes], object], length: int | None,
    progress: Progress | None, chunk: int = _FILE_CHUNK,
) -> int:
    """Copy from `src` to `write` until EOF or `length` bytes; report progress; the count."""
    done = 0
    while length is None or done < length:
        want = chunk if length is None else min(chunk, length - done)
        data = src.read(want)
        if not data:
            break
        write(data)
        done += len(data)
        if progress is not None:
            progress(done)
    return done


def _write_some(
    sel: selectors.BaseSelector, stream: IO[bytes], pending: memoryview
) -> memoryview:
    """Write what the pipe takes now; close it once everything is written (or unwanted)."""
    try:
        written = os.write(stream.fileno(), pending[:_READ_CHUNK])
    except BlockingIOError:
        return pending
    except BrokenPipeError:
        # The program stopped reading its stdin: that is its business, not an error.
        written = len(pending)
    pending = pending[written:]
    if not pending:
        sel.unregister(stream)
        stream.close()
    return pending


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group (it leads its own session) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _close_streams(proc)


def _close_streams(proc: subprocess.Popen[bytes]) -> None:
    """Close the command's pipes (the selector loop reads their descriptors, never closes)."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
