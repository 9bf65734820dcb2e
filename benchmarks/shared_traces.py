"""The four real workload logs of ../shared/traces/ that the offline benchmarks read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The shared folder sits beside the checkout (../shared), or one level up in a worktree.
CANDIDATES = [ROOT.parent / "shared" / "traces", ROOT.parent.parent / "shared" / "traces"]
DEFAULT_LOGS = [
    "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC-SP2-1996-3.1-cln.swf.gz",
    "HPC2N-2002-2.2-cln.swf.gz",
    "SDSC-BLUE-2000-4.2-cln.swf.gz",
]


def shared_dir() -> Path:
    """The shared traces folder (the first candidate when none exists)."""
    return next((d for d in CANDIDATES if d.is_dir()), CANDIDATES[0])


def trace_paths(given: Sequence[Path] | None) -> list[Path]:
    """The logs named on the command line, else the four shared ones."""
    return list(given) if given else [shared_dir() / name for name in DEFAULT_LOGS]
