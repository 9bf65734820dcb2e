"""Test an adapter without a site: a `Transport` that replays recorded command outputs.

Like httpx's `MockTransport`, `ReplayTransport` stands where the SSH transport would and
answers each command the code under test runs, so every layer above it (dialect parsers,
`BatchAdapter`, the gateway's worker) runs for real. Unlike a mock, it checks the exact
argv of each command, in order, and fails on anything unexpected or never run:

    transport = ReplayTransport()
    transport.expect(["qstat", "-f", "-F", "json", "-x", "101.server"],
                     Recording.load(FIXTURES / "pbs" / "qstat_jobs.txt"))
    adapter = BatchAdapter(transport, PbsDialect())
    ...
    transport.assert_done()

A recording file names where its format comes from, then its exit status and output:

    # <source: a real run of the command, a man page, a documentation URL, source file>
    # command: <the argv that produced it>
    # exit: <exit status>
    # --- stdout
    <stdout, byte for byte>
    # --- stderr
    <stderr, byte for byte>

Files written with `put_bytes` are kept in memory and read back by `read_bytes`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.transport import CommandResult


class ReplayMismatch(AssertionError):
    """The code under test ran a command other than the one expected next (or none)."""


@dataclass(frozen=True)
class Recording:
    """One command's recorded answer and where its format comes from."""

    exit_status: int
    stdout: bytes
    stderr: bytes
    source: str = ""

    @classmethod
    def load(cls, path: Path) -> Recording:
        """A recording file (see the module docstring); its `#` lines become `source`."""
        raw = path.read_bytes()
        head, _, rest = raw.partition(b"# --- stdout\n")
        stdout, _, stderr = rest.partition(b"# --- stderr\n")
        exit_status = None
        source = []
        for line in head.decode().splitlines():
            if line.startswith("# exit:"):
                exit_status = int(line.split(":", 1)[1])
            elif not line.startswith("# command:"):
                source.append(line.removeprefix("#").strip())
        if exit_status is None:
            raise ValueError(f"{path}: no '# exit:' line")
        if not any(source):
            raise ValueError(f"{path}: no line says where this output comes from")
        return cls(exit_status, stdout, stderr, " ".join(s for s in source if s))

    def result(self, argv: Sequence[str]) -> CommandResult:
        """This answer as the CommandResult of running `argv`."""
        return CommandResult(tuple(argv), self.exit_status, self.stdout, self.stderr)


OK = Recording(0, b"", b"", "an empty, successful answer")


@dataclass
class Call:
    """A command the code under test ran."""

    argv: tuple[str, ...]
    stdin: bytes | None
    timeout: float


Answer = Recording | Exception | Callable[[Call], Recording]


@dataclass
class ReplayTransport:
    """Answers the expected commands, in order, with recordings (see the module docstring).

    An answer is a `Recording`, an exception to raise (a `CommandTimeout`, ...), or a
    function of the call (to check what it read on stdin, say) returning a Recording.
    """

    expected: list[tuple[tuple[str, ...], Answer]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def expect(self, argv: Sequence[str], answer: Answer = OK) -> ReplayTransport:
        """Expect `argv` next; answer it with `answer`."""
        with self._lock:
            self.expected.append((tuple(argv), answer))
        return self

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """The next expected command's answer; ReplayMismatch if `argv` is not it."""
        call = Call(tuple(argv), stdin, timeout)
        with self._lock:
            self.calls.append(call)
            if not self.expected:
                raise ReplayMismatch(f"unexpected command {call.argv}")
            wanted, answer = self.expected.pop(0)
        if call.argv != wanted:
            raise ReplayMismatch(f"ran {call.argv}\nexpected {wanted}")
        if isinstance(answer, Exception):
            raise answer
        recording = answer if isinstance(answer, Recording) else answer(call)
        return recording.result(call.argv)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        """Keep the file in memory."""
        with self._lock:
            self.files[path] = (bytes(data), mode)

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        """A file written earlier: (bytes from `offset`, its size), or (b"", None)."""
        with self._lock:
            if path not in self.files:
                return b"", None
            data = self.files[path][0]
        return data[offset:offset + limit], len(data)

    def close(self) -> None:
        self.closed = True

    def assert_done(self) -> None:
        """ReplayMismatch if an expected command was never run."""
        with self._lock:
            left = [argv for argv, _ in self.expected]
        if left:
            raise ReplayMismatch(f"commands never run: {left}")
