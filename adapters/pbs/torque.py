"""TORQUE, where it differs from PBS Professional / OpenPBS. Pure.

TORQUE (Adaptive Computing; the PBS of many older clusters) keeps OpenPBS 2.x's commands,
job attributes, Exit_status values and accounting log, but:

- resources are asked for as `-l nodes=N:ppn=P` and a job-wide `-l mem=`, not `select`
  chunks, and there is no `place`;
- `qstat -x` means XML, not job history: `qstat -f -x <ids>` prints `<?xml ...?>` and
  `<Data><Job><Job_Id>..</Job_Id><attribute>value</attribute>...<Resource_List><nodes>
  ..</nodes></Resource_List></Job></Data>`, every value as the server holds it (times in
  epoch seconds) (TORQUE src/cmds/qstat.c, display_statjob and create_full_job_xml);
  finished jobs stay listed in state C with their exit_status for the server's
  keep_completed time;
- `qselect` has no `-x`; `qstat -Q -f` has no JSON: `Queue: <name>` and then indented
  `attribute[.resource] = value` lines (qstat.c, display_statque and prt_attr).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from adapters.base import JobStatus, NativeState, SubmitRequest
from adapters.batch.script import ranks_per_node
from adapters.batch.text import duration, integer, lines, query_failed, text, timestamp
from adapters.batch.types import QueueInfo
from adapters.errors import SiteUnavailable
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import ended, native_state
from adapters.pbs.status import sequence_number
from adapters.pbs.submit import JOB_ID
from adapters.reasons import scheduler_says
from adapters.transport import CommandResult

# TORQUE's job_state letters (qstat(1B) of TORQUE): C completed, E exiting, and those of
# PBS (H, Q, R, S, T, W); a C job's exit_status says how it ended.
COMPLETED = "C"
_UNKNOWN = "Unknown Job Id"
_COUNT = re.compile(r"(\w+):(\d+)")
_ATTRIBUTE = re.compile(r"\s+(?P<name>[\w.]+) = (?P<value>.*)")


def resources(request: SubmitRequest) -> list[list[str]]:
    """`-l nodes=N:ppn=P` (a node's ranks times threads) and the job's memory in all."""
    res = request.resources
    options = [["-l", f"nodes={res.nodes}:ppn={ranks_per_node(res) * res.threads_per_rank}"]]
    if res.memory_mb is not None:
        options.append(["-l", f"mem={res.memory_mb * res.nodes}mb"])
    return options


def status_command(commands: PbsCommands, native_ids: Sequence[str]) -> tuple[str, ...]:
    ids = [i for i in native_ids if JOB_ID.matches(i)]
    return (commands.qstat, "-f", "-x", *ids)


def child_text(element: Element, tag: str) -> str:
    found = element.find(tag)
    return (found.text or "").strip() if found is not None else ""


def job_elements(result: CommandResult) -> list[Element]:
    body = text(result.stdout).strip()
    if not body:
        errors = lines(result.stderr)
        if result.exit_status == 0 or (errors and all(_UNKNOWN in e for e in errors)):
            return []
        raise query_failed(result)
    try:
        root = ElementTree.fromstring(body)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise SiteUnavailable(f"qstat -x printed unreadable XML ({exc}): {body[:200]!r}") from exc
    return list(root.iter("Job"))


def job_status(native_id: str, job: Element) -> JobStatus:
    letter = child_text(job, "job_state")
    comment = child_text(job, "comment") or None
    # TORQUE keeps times as epoch seconds: no time zone to apply.
    started = timestamp(child_text(job, "start_time"), UTC)
    if letter == COMPLETED:
        exit_status = integer(child_text(job, "exit_status"))
        state, reason, code = ended(exit_status, comment)
        return JobStatus(native_id, state, f"C (exit_status {exit_status})", reason, code,
                         started, timestamp(child_text(job, "comp_time"), UTC))
    state, reason = native_state(letter)
    if state is NativeState.QUEUED:
        reason = scheduler_says(comment) if comment else reason
        return JobStatus(native_id, state, letter, reason)
    return JobStatus(native_id, state, letter, reason, started_at=started)


def parse_status(result: CommandResult, native_ids: Sequence[str]) -> dict[str, JobStatus]:
    by_number = {sequence_number(i): i for i in native_ids}
    found: dict[str, JobStatus] = {}
    for job in job_elements(result):
        key = child_text(job, "Job_Id")
        native_id = key if key in native_ids else by_number.get(sequence_number(key))
        if native_id is not None:
            found[native_id] = job_status(native_id, job)
    return found


def find_command(commands: PbsCommands, tag: str) -> tuple[str, ...]:
    """qselect -N: TORQUE's qselect lists completed jobs (state C) too, and has no -x."""
    return (commands.qselect, "-N", tag)


def queues_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.qstat, "-Q", "-f")


def queue_attributes(result: CommandResult) -> dict[str, dict[str, str]]:
    """Each queue's `attribute[.resource]` -> value, continued lines joined."""
    if result.exit_status != 0:
        raise query_failed(result)
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    last = ""
    for line in text(result.stdout).splitlines():
        if line.startswith("Queue: "):
            current = blocks.setdefault(line.removeprefix("Queue: ").strip(), {})
        elif current is not None and line.startswith("\t") and last:
            # prt_attr breaks a long value at 77 columns, going on after "\n\t".
            current[last] += line.strip()
        elif current is not None and (match := _ATTRIBUTE.fullmatch(line)):
            last = match["name"]
            current[last] = match["value"].strip()
    return blocks


def parse_queues(result: CommandResult, default_queue: str | None) -> list[QueueInfo]:
    """Execution queues; routing queues run no jobs."""
    found = []
    for name, attrs in queue_attributes(result).items():
        if attrs.get("queue_type", "").lower() != "execution":
            continue
        counts = {k: int(v) for k, v in _COUNT.findall(attrs.get("state_count", ""))}
        available = (attrs.get("enabled", "").lower() == "true"
                     and attrs.get("started", "").lower() == "true")
        found.append(QueueInfo(
            name=name,
            default=name == default_queue,
            available=available,
            state="enabled, started" if available else "disabled or stopped",
            max_walltime=duration(attrs.get("resources_max.walltime")),
            max_nodes=integer(attrs.get("resources_max.nodes")),
            jobs_running=counts.get("Running"),
            jobs_pending=None if not counts else counts.get("Queued", 0) + counts.get("Held", 0),
        ))
    return found

