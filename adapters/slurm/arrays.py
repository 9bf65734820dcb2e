"""Slurm job arrays (sbatch(1) `--array`, https://slurm.schedmd.com/job_array.html). Pure.

`--array=0-19%4` submits tasks 0..19, at most 4 running at once; a task reads its number
(the gateway's index: Slurm numbers tasks as the gateway does) in SLURM_ARRAY_TASK_ID.
squeue and sacct name a task `JOBID_INDEX` (`123_3`) and fold the tasks still pending
into one line `JOBID_[RANGES%THROTTLE]` (`123_[4-19%4]`, `123_[4,6-9]`; seen on the
testbed, tests/live/test_array_outputs.py). The parsers here unfold such lines into one
id per task, so every task has a state of its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.base import ArrayRequest
from adapters.batch.arrays import ArrayShape, check_array, list_text

SHAPE = ArrayShape("SLURM_ARRAY_TASK_ID", 0)
# slurm.conf(5) MaxArraySize: "the maximum job array task index value will be one less
# than MaxArraySize"; default 1001.
DEFAULT_MAX_ARRAY_SIZE = 1001
# A task (`123_3`) or pending tasks folded (`123_[4-19%4]`).
_TASK = re.compile(r"(?P<job>[0-9]+)_(?:(?P<index>[0-9]+)|\[(?P<folded>[0-9,:\-]+)(?:%[0-9]+)?\])")
_PART = re.compile(r"(?P<start>[0-9]+)(?:-(?P<stop>[0-9]+)(?::(?P<step>[0-9]+))?)?")
# Unfolding a line never lists more tasks than Slurm's own ceiling (MaxArraySize <= 4000001).
_MAX_TASKS = 4_000_001


def array_option(array: ArrayRequest) -> str:
    """`--array=<indices>[%throttle]`, the indices as few ranges as possible."""
    check_array(array, SHAPE.offset)
    option = f"--array={list_text(array)}"
    return option if array.throttle is None else f"{option}%{array.throttle}"


def task_id(job_id: str, index: int) -> str:
    """The id squeue and sacct give task `index` of array job `job_id`."""
    return f"{job_id}_{index}"


def base_id(native_id: str) -> str:
    """The array job's id of a task id (`123_3` -> `123`); other ids unchanged."""
    match = _TASK.fullmatch(native_id)
    return match["job"] if match else native_id


def unfold(native_id: str) -> list[str]:
    """The task ids a squeue/sacct id stands for: itself, or each task of a folded line."""
    match = _TASK.fullmatch(native_id)
    if match is None or match["folded"] is None:
        return [native_id]
    found: list[str] = []
    for part in match["folded"].split(","):
        run = _PART.fullmatch(part)
        if run is None:
            return [native_id]
        start = int(run["start"])
        stop = int(run["stop"]) if run["stop"] else start
        step = int(run["step"]) if run["step"] else 1
        if stop < start or step < 1 or len(found) + (stop - start) // step >= _MAX_TASKS:
            return [native_id]
        found += [task_id(match["job"], i) for i in range(start, stop + 1, step)]
    return found


def task_index(native_id: str) -> int | None:
    """The task number of a task id (`123_3` -> 3), None for another id."""
    match = _TASK.fullmatch(native_id)
    return int(match["index"]) if match and match["index"] is not None else None


def status_ids(native_ids: Sequence[str]) -> list[str]:
    """The ids to ask squeue about: an array's job id once for all its tasks (squeue
    lists every task of `--jobs=123`, folding the pending ones)."""
    return list(dict.fromkeys(base_id(i) for i in native_ids))
