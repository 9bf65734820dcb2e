"""The four real workload logs of ../shared/traces/ that the offline benchmarks read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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


def existing_traces(given: Sequence[Path] | None) -> list[Path]:
    """`trace_paths(given)`, exiting with the names of the logs that do not exist."""
    logs = trace_paths(given)
    missing = [str(log) for log in logs if not log.is_file()]
    if missing:
        sys.exit(f"no such log: {', '.join(missing)}")
    return logs


def add_trace_option(parser: argparse.ArgumentParser) -> None:
    """`--trace LOG` (repeatable), the logs a benchmark reads."""
    parser.add_argument("--trace", action="append", type=Path,
                        help="an SWF log, gzipped or not (repeatable; default: the shared four)")


def each_log(run: Callable[[Path], dict[str, Any]], given: Sequence[Path] | None
             ) -> list[dict[str, Any]]:
    """`run` on each log (named, else the shared four), one at a time, saying when each is
    done on stderr; exits naming the logs that do not exist."""
    logs = existing_traces(given)
    results = []
    for log in logs:
        results.append(run(log))
        print(f"{log.name}: done", file=sys.stderr, flush=True)
    return results
