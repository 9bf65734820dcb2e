"""Native job arrays, what every dialect shares. Pure.

A native array is one submission (`SubmitRequest.array`) whose tasks the scheduler
numbers itself: Slurm from the gateway's own indices (`--array=0-19%4`,
SLURM_ARRAY_TASK_ID), Grid Engine and LSF from 1 (`-t 1-20 -tc 4`, SGE_TASK_ID;
`-J "name[1-20]%4"`, LSB_JOBINDEX), PBS Pro from the gateway's indices (`-J 0-19`,
PBS_ARRAY_INDEX). An `ArrayShape` says which variable holds the scheduler's number and
what to subtract from it to get the gateway's index.

Every task of an array shares the batch script. The script's first lines turn the
scheduler's number into the gateway's index (GRIDGATE_ARRAY_TASK_ID, the same name
plain tasks get), then make and enter the task's own directory `<array dir>/<index>`
and send its stdout and stderr there, so each task's files are where a plain job's
would be (adapters.batch.types.JobLayout of that directory). Only digits and fixed
text reach those lines; the directory goes through `shlex.quote`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.base import ArrayRequest
from adapters.batch.types import STDERR_NAME, STDOUT_NAME
from adapters.errors import SubmitRejected

TASK_ID_ENV = "GRIDGATE_ARRAY_TASK_ID"


@dataclass(frozen=True)
class ArrayShape:
    """How one scheduler numbers array tasks: the variable a task reads its number
    from, and `offset` = scheduler number - gateway index."""

    variable: str
    offset: int


def runs(indices: Sequence[int]) -> list[tuple[int, int, int]]:
    """Sorted distinct indices as few (start, stop, step) runs as a greedy pass finds,
    e.g. 0,2,4,5 -> (0, 4, 2), (5, 5, 1)."""
    found: list[tuple[int, int, int]] = []
    values = sorted(set(indices))
    at = 0
    while at < len(values):
        start = values[at]
        if at + 1 == len(values):
            found.append((start, start, 1))
            break
        step = values[at + 1] - start
        stop_at = at + 1
        while stop_at + 1 < len(values) and values[stop_at + 1] - values[stop_at] == step:
            stop_at += 1
        if stop_at == at + 1 and step > 1 and at + 2 < len(values):
            # Two lone indices: keep the first alone, the next may start a longer run.
            found.append((start, start, 1))
            at += 1
            continue
        found.append((start, values[stop_at], step))
        at = stop_at + 1
    return found


def run_text(start: int, stop: int, step: int, offset: int = 0) -> str:
    """`5`, `0-19` or `0-18:2`, each number shifted by `offset`."""
    if start == stop:
        return str(start + offset)
    text = f"{start + offset}-{stop + offset}"
    return text if step == 1 else f"{text}:{step}"


def list_text(array: ArrayRequest, offset: int = 0) -> str:
    """The indices as a comma list of runs (Slurm, LSF), shifted by `offset`."""
    return ",".join(run_text(*run, offset=offset) for run in runs(array.indices))


def single_run(array: ArrayRequest, offset: int = 0) -> str:
    """The indices as one run (Grid Engine, PBS); SubmitRejected when they are not one."""
    found = runs(array.indices)
    if len(found) != 1:
        raise SubmitRejected(
            f"this scheduler's arrays are one range with a step; {len(array.indices)} "
            "indices that are not one range are submitted task by task")
    return run_text(*found[0], offset=offset)


def is_single_run(array: ArrayRequest) -> bool:
    """Whether the indices form one range with a step."""
    return len(runs(array.indices)) == 1


def check_array(array: ArrayRequest, offset: int) -> None:
    """Refuse an array no scheduler can take: no index, a negative index or throttle."""
    if not array.indices:
        raise SubmitRejected("a job array needs at least one index")
    if min(array.indices) + offset < 0 or (array.throttle is not None and array.throttle < 1):
        raise SubmitRejected("array indices and throttle must not be negative")


def task_lines(shape: ArrayShape, workdir: str, tag: str) -> list[str]:
    """Script lines run first by every task: its gateway index, its own directory (made
    and entered), its stdout and stderr in that directory, and its own tag."""
    base = shlex.quote(workdir.rstrip("/") or "/")
    index = f"${shape.variable}"
    if shape.offset:
        index = f"$(( {index} - {shape.offset} ))"
    return [
        f"{TASK_ID_ENV}={index}; export {TASK_ID_ENV}",
        f'GRIDGATE_WORKDIR={base}/"${TASK_ID_ENV}"; export GRIDGATE_WORKDIR',
        f'GRIDGATE_JOB_TAG={shlex.quote(tag)}_"${TASK_ID_ENV}"; export GRIDGATE_JOB_TAG',
        'mkdir -p -m 700 -- "$GRIDGATE_WORKDIR" || exit 1',
        f'exec >"$GRIDGATE_WORKDIR/{STDOUT_NAME}" 2>"$GRIDGATE_WORKDIR/{STDERR_NAME}"',
    ]


def task_workdir(workdir: str, index: int) -> str:
    """Where task `index` of the array in `workdir` runs (see module)."""
    return f"{workdir.rstrip('/')}/{index}"
