"""LSF job arrays (bsub(1) `-J "name[index_list]%job_slot_limit"`). Pure.

IBM's bsub -J reference: the index list is a comma list of `start[-end[:step]]` of
positive integers, "by default, the job array index starts at one", and `%N` is the
most elements that run at once. Element `i + 1` is the gateway's index `i`, and reads
its number in LSB_JOBINDEX. An element is `JOBID[N]` to bjobs and bkill; bjobs names
it `name[N]` (JOB_NAME) and gives N in its `jobindex` field (0 for a plain job).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from adapters.base import ArrayRequest
from adapters.batch.arrays import ArrayShape, check_array, list_text

SHAPE = ArrayShape("LSB_JOBINDEX", 1)
_ELEMENT_NAME = re.compile(r".*\[(?P<index>[0-9]+)\]")


def array_name(tag: str, array: ArrayRequest) -> str:
    """`tag[1-20]%4`: bsub's -J value for the array (indices numbered from 1)."""
    check_array(array, SHAPE.offset)
    name = f"{tag}[{list_text(array, offset=SHAPE.offset)}]"
    return name if array.throttle is None else f"{name}%{array.throttle}"


def task_id(job_id: str, index: int) -> str:
    """`123[4]` for the gateway's index 3."""
    return f"{job_id}[{index + SHAPE.offset}]"


def record_id(record: Mapping[str, Any]) -> str:
    """A bjobs record's id: `JOBID[N]` for an array element, else JOBID."""
    number = str(record.get("JOBID", ""))
    index = str(record.get("JOBINDEX", "")).strip()
    if index in ("", "0"):
        match = _ELEMENT_NAME.fullmatch(str(record.get("JOB_NAME", "")))
        index = match["index"] if match else ""
    return f"{number}[{index}]" if index not in ("", "0") else number


def is_element_of(record: Mapping[str, Any], tag: str) -> bool:
    """Whether a bjobs record is an element of the array named `tag`."""
    name = str(record.get("JOB_NAME", ""))
    return name.startswith(f"{tag}[") and _ELEMENT_NAME.fullmatch(name) is not None
