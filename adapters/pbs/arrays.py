"""PBS Professional / OpenPBS array jobs (qsub(1B) `-J X-Y[:Z]`). Pure.

A subjob reads its index in PBS_ARRAY_INDEX, numbered as the gateway numbers its tasks
(PBS indices may start at 0). `-J` takes one range with a step. qsub prints the array
job's id with empty brackets (`123[].server`); subjob `i` is `123[i].server`, which
qstat, qdel and the accounting log name as such (qstat(1B), pbs_job_attributes(7B)).

The throttle: OpenPBS (since 2020.1) keeps at most `max_run_subjobs` subjobs of an array
running, set at submission with the `%` suffix of `-J` or with `-W max_run_subjobs=N`
(its own functional tests, tests/functional/pbs_job_array.py
`test_max_run_subjobs_basic`, submit `-J 1-20%2` and later alter `max_run_subjobs=5`).
Older PBS Professional releases have neither and refuse the `%`; TORQUE's `-t` has a
`%` slot limit of its own, and its arrays are not used here (a TORQUE site submits task
by task). PBS refuses an array of one subjob, so such an array goes task by task too.
"""

from __future__ import annotations

import re

from adapters.base import ArrayRequest
from adapters.batch.arrays import ArrayShape, check_array, is_single_run, single_run

SHAPE = ArrayShape("PBS_ARRAY_INDEX", 0)
_ARRAY_ID = re.compile(r"(?P<number>[0-9]+)\[(?P<index>[0-9]*)\](?P<server>\.\S+)?")


def fits(array: ArrayRequest) -> bool:
    """One range with a step, of at least two subjobs."""
    return len(array.indices) >= 2 and min(array.indices) >= 0 and is_single_run(array)


def array_options(array: ArrayRequest) -> list[list[str]]:
    """`-J X-Y[:Z][%N]`."""
    check_array(array, SHAPE.offset)
    run = single_run(array)
    return [["-J", run if array.throttle is None else f"{run}%{array.throttle}"]]


def task_id(job_id: str, index: int) -> str:
    """`123[].server` (or `123`) -> `123[3].server` for index 3."""
    match = _ARRAY_ID.fullmatch(job_id)
    if match is None:
        number, dot, server = job_id.partition(".")
        return f"{number}[{index}]{dot}{server}"
    return f"{match['number']}[{index}]{match['server'] or ''}"
