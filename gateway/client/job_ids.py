"""Job ids as people type them, resolved by the gateway in one request among the jobs
you may read (yours; every job for auditors and administrators: GET /jobs, or for `audit
job` the stories you may read, your projects' as their PI too: GET /audit/jobs): a whole
id, any unique start of one (`d3eca39f`, as tables show), or a task of a job array written
as Slurm writes it, ARRAY_INDEX (`d3eca39f_3`); and job arrays' ids the same way (GET
/job-arrays?id_prefix=...). The gateway decides what a caller may read; nothing here
widens it."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from gateway.client.errors import AmbiguousJobId, NotFoundError, problem_error
from gateway.client.transport import is_job_id
from rules.text import JOB_ID_PREFIX

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient

# Jobs an ambiguous short id lists (and asks for one more, to say there are more).
MAX_ID_CANDIDATES = 10
TASK = re.compile(r"(?P<array>[0-9a-f-]{1,36})_(?P<index>[0-9]{1,10})")
# (prefix, how many) -> the readable jobs whose ids start so, newest first.
Finder = Callable[[str, int], Sequence[Mapping[str, Any]]]


class Target(NamedTuple):
    """What an id names: a job, or a job array (all its tasks)."""

    kind: Literal["job", "array"]
    id: str


def _not_found(text: str, what: str, hint: bool = False) -> NotFoundError:
    detail = f"No {what} you can read has an id starting with '{text}'"
    detail += f" ({JOB_ID_PREFIX.hint})." if hint else "."
    error = problem_error(404, {"title": "Not found", "detail": detail})
    assert isinstance(error, NotFoundError)
    return error


def resolve_job_id(client: GatewayClient, text: str, find: Finder | None = None) -> str:
    """The id of the job `text` names (see module), a prefix looked up with `find` (GET
    /jobs when None). NotFoundError when none does; AmbiguousJobId, listing them, when
    several do."""
    wanted = text.strip().lower()
    task = TASK.fullmatch(wanted)
    if task is not None:
        return _task(client, text, resolve_array_id(client, task["array"]),
                     int(task["index"]))
    if is_job_id(wanted):
        return wanted
    if not JOB_ID_PREFIX.matches(wanted):  # cannot start any id: no need to ask
        raise _not_found(text, "job", hint=True)
    found: list[Mapping[str, Any]] = list(
        find(wanted, MAX_ID_CANDIDATES + 1) if find is not None
        else client.list_jobs(id_prefix=wanted, limit=MAX_ID_CANDIDATES + 1)["items"])
    if len(found) == 1:
        return str(found[0]["id"])
    if not found:
        raise _not_found(text, "job")
    raise AmbiguousJobId(text, found[:MAX_ID_CANDIDATES], more=len(found) > MAX_ID_CANDIDATES)


def _task(client: GatewayClient, text: str, array_id: str, index: int) -> str:
    found = client.list_jobs(array_job_id=array_id, array_index=index, limit=1)["items"]
    if not found:
        error = problem_error(404, {"title": "Not found", "detail": (
            f"'{text}': job array {array_id} has no task {index}.")})
        raise error
    return found[0]["id"]


def resolve_array_id(client: GatewayClient, text: str) -> str:
    """The id of the job array `text` names: a whole id as it is, else the one array of
    yours (any for auditors and administrators) whose id starts with it."""
    wanted = text.strip().lower()
    if is_job_id(wanted):
        return wanted
    if not JOB_ID_PREFIX.matches(wanted):
        raise _not_found(text, "job array", hint=True)
    found = client.list_job_arrays(id_prefix=wanted, limit=MAX_ID_CANDIDATES + 1)["items"]
    if len(found) == 1:
        return found[0]["id"]
    if not found:
        raise _not_found(text, "job array")
    raise AmbiguousJobId(text, list(found[:MAX_ID_CANDIDATES]),
                         more=len(found) > MAX_ID_CANDIDATES, what="job arrays")


def resolve_target(client: GatewayClient, text: str) -> Target:
    """The job or job array `text` names (as Slurm's `scancel ARRAY_ID` means the whole
    array): a job you may read first, then an array. A whole id that is neither is taken
    as a job's, for the gateway to judge."""
    wanted = text.strip().lower()
    if TASK.fullmatch(wanted) is not None:
        return Target("job", resolve_job_id(client, text))
    if is_job_id(wanted):
        if client.list_jobs(id_prefix=wanted, limit=1)["items"]:
            return Target("job", wanted)
        arrays = client.list_job_arrays(id_prefix=wanted, limit=1)["items"]
        return Target("array" if arrays else "job", wanted)
    try:
        return Target("job", resolve_job_id(client, text))
    except NotFoundError as job_missing:
        try:
            return Target("array", resolve_array_id(client, text))
        except NotFoundError:
            raise _not_found(text, "job or job array",
                             hint=not JOB_ID_PREFIX.matches(wanted)) from job_missing


def resolve_any(client: GatewayClient, text: str) -> str:
    """The id of the job or job array `text` names, for a dependency (a whole id is sent
    as it is: the gateway says whether it is one you may wait for)."""
    wanted = text.strip().lower()
    if is_job_id(wanted):
        return wanted
    return resolve_target(client, text).id
