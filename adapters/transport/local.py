"""`LocalTransport`: runs argv on this machine without a shell; files are local paths."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import IO

from adapters.errors import CommandTimeout, FileTransferError, OutputTooLarge
from adapters.transport.argv import check_argv, check_read_range, shown
from adapters.transport.protocol import (
    DEFAULT_MAX_OUTPUT_BYTES,
    CommandResult,
    LocalSink,
    LocalSource,
    Progress,
)
from adapters.transport.streams import copy_stream, open_sink, open_source

_READ_CHUNK = 1 << 16


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
