"""Many submissions in one remote command: the script that runs them and its parser. Pure.

A burst of jobs costs one SSH round trip per batch instead of one per job. For each job
the script makes the job directories, pipes the batch script into the scheduler's submit
command, and reports in a framed record, so any output (newlines and all) is data:

    gw-submit <index> <exit status> <byte count>\\n<that many bytes>\\n

Every path, word and script reaches the shell through `shlex.quote`; the script's own
text is fixed. A job whose directories cannot be made reports MKDIR_FAILED.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.transport import CommandResult

# Exit status reported for a job whose directories could not be created (submit
# commands exit 0, 1 or 2, never this).
MKDIR_FAILED = 97
_HEADER = re.compile(rb"gw-submit (\d+) (\d+) (\d+)\n")


@dataclass(frozen=True)
class BatchItem:
    """One job of a batch: its directories, its submit argv and the bytes for its stdin."""

    workdir: str
    control_dir: str
    argv: tuple[str, ...]
    stdin: bytes | None


def batch_script(items: Sequence[BatchItem]) -> str:
    """The `sh -c` script that submits `items` in order, one framed record each."""
    parts = ["LC_ALL=C; export LC_ALL"]
    for index, item in enumerate(items):
        dirs = f"{shlex.quote(item.workdir)} {shlex.quote(item.control_dir)}"
        submit = shlex.join(item.argv)
        if item.stdin is not None:
            submit = f"printf %s {shlex.quote(item.stdin.decode())} | {submit}"
        else:
            submit = f"{submit} </dev/null"
        parts.append(
            f"if out=$(mkdir -p -m 700 -- {dirs} 2>&1); then out=$({submit} 2>&1); rc=$?; "
            f"else rc={MKDIR_FAILED}; fi; "
            f'printf "gw-submit {index} %d %d\\n%s\\n" "$rc" "${{#out}}" "$out"')
    return "\n".join(parts) + "\n"


def script_bytes(item: BatchItem) -> int:
    """How much `item` adds to a batch script (to keep one command under the limits)."""
    return len(batch_script([item]).encode())


def parse_batch(output: bytes, argvs: Sequence[tuple[str, ...]]) -> dict[int, CommandResult]:
    """Each job's result by index, as if its submit command had run alone (its output
    on stdout when it succeeded, on stderr when not). Jobs without a complete record
    (the script was cut short) are missing."""
    results: dict[int, CommandResult] = {}
    pos = 0
    while True:
        match = _HEADER.match(output, pos)
        if match is None:
            return results
        index, status, size = (int(g) for g in match.groups())
        start = match.end()
        end = start + size
        if index >= len(argvs) or len(output) <= end or output[end:end + 1] != b"\n":
            return results
        body = output[start:end]
        results[index] = CommandResult(argvs[index], status, body if status == 0 else b"",
                                       b"" if status == 0 else body)
        pos = end + 1
