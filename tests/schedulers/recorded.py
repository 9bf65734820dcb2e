"""Recorded scheduler outputs, and a Transport that replays them.

A fixture file (fixtures/<scheduler>/<name>.txt) starts with `#` lines saying where its
format comes from (documentation, public source, TESTBED-NOTES, or a real binary), then
`# exit: N`, then the `# --- stdout` and `# --- stderr` sections, byte for byte.

`ReplayTransport` stands in for the SSH transport in adapter tests: it checks that the
adapter runs exactly the argv expected, in order, and answers with the recorded output;
files are kept in memory. It replaces no part of the scheduler logic under test. The real
schedulers (Slurm, Grid Engine) are exercised over real SSH by the live testbed tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.transport import CommandResult

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Recording:
    exit_status: int
    stdout: bytes
    stderr: bytes
    source: str = ""

    def result(self, argv: Sequence[str]) -> CommandResult:
        return CommandResult(tuple(argv), self.exit_status, self.stdout, self.stderr)


OK = Recording(0, b"", b"", "an empty, successful answer")


def load(scheduler: str, name: str) -> Recording:
    """One fixture file."""
    raw = (FIXTURES / scheduler / name).read_bytes()
    head, _, rest = raw.partition(b"# --- stdout\n")
    stdout, _, stderr = rest.partition(b"# --- stderr\n")
    exit_status = None
    source = []
    for line in head.decode().splitlines():
        if line.startswith("# exit:"):
            exit_status = int(line.split(":", 1)[1])
        else:
            source.append(line.removeprefix("#").strip())
    assert exit_status is not None, f"{name}: no '# exit:' line"
    return Recording(exit_status, stdout, stderr, " ".join(source))


def result(scheduler: str, name: str, argv: Sequence[str] = ("recorded",)) -> CommandResult:
    """A fixture as the CommandResult of `argv`."""
    return load(scheduler, name).result(argv)


@dataclass
class Call:
    argv: tuple[str, ...]
    stdin: bytes | None
    timeout: float


@dataclass
class ReplayTransport:
    """Answers the expected commands, in order, with recorded outputs (see module docstring)."""

    expected: list[tuple[tuple[str, ...], Recording | Exception]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    closed: bool = False

    def expect(
        self, argv: Sequence[str], answer: Recording | Exception = OK
    ) -> ReplayTransport:
        """Expect `argv` next; answer with a recording, or raise (e.g. a CommandTimeout)."""
        self.expected.append((tuple(argv), answer))
        return self

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        items = tuple(argv)
        self.calls.append(Call(items, stdin, timeout))
        assert self.expected, f"unexpected command {items}"
        wanted, answer = self.expected.pop(0)
        assert items == wanted, f"ran {items}\nexpected {wanted}"
        if isinstance(answer, Exception):
            raise answer
        return answer.result(items)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        self.files[path] = (bytes(data), mode)

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        if path not in self.files:
            return b"", None
        data = self.files[path][0]
        return data[offset:offset + limit], len(data)

    def close(self) -> None:
        self.closed = True

    def assert_done(self) -> None:
        assert not self.expected, f"commands never run: {[argv for argv, _ in self.expected]}"
