"""Grid Engine array jobs (qsub(1) `-t n[-m[:s]]` and `-tc max_running_tasks`). Pure.

Grid Engine numbers tasks from 1 (qsub(1): "n ... must be a positive integer"): task
`i + 1` is the gateway's index `i`, and reads its number in SGE_TASK_ID. One range with
a step is all `-t` takes, so other index sets go task by task. A task is named
`JOB.TASK` here (the form qstat -j and qacct print beside each other; qdel takes
`JOB -t TASK`). qstat -xml lists a running task as its own `job_list` with
`<tasks>3</tasks>`, and the pending ones of a job folded as `<tasks>3-6:1</tasks>` (or
a comma list); qacct -j JOB prints one record per task with `taskid N` (`undefined` for
a job that is not an array). Seen on the testbed's Grid Engine 8.1.9
(tests/live/test_array_outputs.py).
"""

from __future__ import annotations

import re

from adapters.base import ArrayRequest
from adapters.batch.arrays import ArrayShape, check_array, single_run
from rules.text import TextRule

SHAPE = ArrayShape("SGE_TASK_ID", 1)
TASK_ID = TextRule("Grid Engine array task id", r"[0-9]+\.[0-9]+", "JOB.TASK, e.g. 123.4")
_RUN = re.compile(r"(?P<start>[0-9]+)(?:-(?P<stop>[0-9]+)(?::(?P<step>[0-9]+))?)?")
# Unfolding never lists more tasks than Grid Engine's own ceiling (max_aj_tasks <= 75000
# by default; a bound against nonsense, not a policy).
_MAX_TASKS = 1_000_000


def array_options(array: ArrayRequest) -> list[list[str]]:
    """`-t FIRST-LAST:STEP` (numbered from 1) and `-tc N` for a throttle."""
    check_array(array, SHAPE.offset)
    options = [["-t", single_run(array, offset=SHAPE.offset)]]
    if array.throttle is not None:
        options.append(["-tc", str(array.throttle)])
    return options


def task_id(job_id: str, index: int) -> str:
    """The id of the task that is the gateway's index `index` (`123.4` for index 3)."""
    return f"{job_id}.{index + SHAPE.offset}"


def split(native_id: str) -> tuple[str, str | None]:
    """`123.4` -> ("123", "4"); a job id -> (it, None)."""
    if TASK_ID.matches(native_id):
        job, _, task = native_id.partition(".")
        return job, task
    return native_id, None


def tasks(folded: str) -> list[int]:
    """The task numbers of qstat's `<tasks>` text (`3`, `3-6:1`, `1,3-5`); [] if none."""
    found: list[int] = []
    for part in folded.split(","):
        match = _RUN.fullmatch(part.strip())
        if match is None:
            return []
        start = int(match["start"])
        stop = int(match["stop"]) if match["stop"] else start
        step = int(match["step"]) if match["step"] else 1
        if stop < start or step < 1 or len(found) + (stop - start) // step >= _MAX_TASKS:
            return []
        found += range(start, stop + 1, step)
    return found


def record_id(fields: dict[str, str]) -> str:
    """The id of a qacct record: `JOB.TASK` for an array task, else the job number."""
    job, task = fields.get("jobnumber", ""), fields.get("taskid", "")
    return f"{job}.{task}" if task.isdigit() else job
