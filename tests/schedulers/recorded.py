"""Recorded scheduler outputs (fixtures/<scheduler>/<name>.txt) for adapter tests.

The file format and the replaying transport are shipped for anyone writing an adapter:
`adapters.testing` (`Recording`, `ReplayTransport`). This module only finds the files of
this repository's fixtures: each starts with `#` lines saying where its format comes
from (documentation, public source, TESTBED-NOTES, or a real binary). The real
schedulers (Slurm, Grid Engine) are exercised over real SSH by the live testbed tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from adapters.testing import OK, Call, Recording, ReplayTransport
from adapters.transport import CommandResult

FIXTURES = Path(__file__).parent / "fixtures"

__all__ = ["FIXTURES", "OK", "Call", "Recording", "ReplayTransport", "load", "result"]


def load(scheduler: str, name: str) -> Recording:
    """One fixture file."""
    return Recording.load(FIXTURES / scheduler / name)


def result(scheduler: str, name: str, argv: Sequence[str] = ("recorded",)) -> CommandResult:
    """A fixture as the CommandResult of `argv`."""
    return load(scheduler, name).result(argv)
