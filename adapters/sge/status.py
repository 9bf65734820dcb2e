"""qstat -xml -u '*': pending and running jobs of all users, one call for every job. Pure.

Format: Son of Grid Engine 8.1.9, source/clients/qstat/qstat_xml.c: a `job_info` root
holding `queue_info` (running jobs) and `job_info` (pending jobs), each with `job_list`
elements carrying JB_job_number, JB_name, JB_owner, state, JAT_start_time (running) or
JB_submission_time (pending), queue_name and slots. Times are the qmaster's local time
as `%Y-%m-%dT%H:%M:%S` (sge_ctimeXML). A finished job is not listed: qacct knows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from adapters.base import JobStatus
from adapters.batch.text import query_failed, text, timestamp
from adapters.errors import SiteUnavailable
from adapters.sge.arrays import tasks
from adapters.sge.commands import SgeCommands
from adapters.sge.states import native_state
from adapters.transport import CommandResult
from rules.text import TextRule

JOB_ID = TextRule("Grid Engine job id", r"[0-9]+", "digits, e.g. 123")


@dataclass(frozen=True)
class QueuedJob:
    native_id: str
    name: str
    owner: str
    state: str
    started_at: datetime | None
    # An array job's tasks this line stands for (qstat's `<tasks>`), () for a plain job.
    tasks: tuple[int, ...] = ()

    @property
    def ids(self) -> list[str]:
        """The ids of the jobs this line is about: `JOB.TASK` for each task, or `JOB`."""
        return [f"{self.native_id}.{t}" for t in self.tasks] or [self.native_id]


def status_command(commands: SgeCommands) -> tuple[str, ...]:
    # '*' is an argument, never a glob: argv elements are quoted on the site.
    return (commands.qstat, "-xml", "-u", "*")


def child_text(element: Element, tag: str) -> str:
    found = element.find(tag)
    return (found.text or "").strip() if found is not None else ""


def job_elements(result: CommandResult) -> list[Element]:
    """The `job_list` elements of qstat's XML, running and pending."""
    if result.exit_status != 0:
        raise query_failed(result)
    try:
        root = ElementTree.fromstring(result.stdout)
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise SiteUnavailable(f"qstat -xml printed unreadable XML ({exc}): "
                              f"{text(result.stdout)[:200]!r}") from exc
    if root.tag != "job_info":
        raise SiteUnavailable(f"qstat -xml printed <{root.tag}>, not <job_info>: "
                              f"{text(result.stdout)[:200]!r}")
    return list(root.iter("job_list"))


def parse_jobs(result: CommandResult, tz: tzinfo) -> list[QueuedJob]:
    """Every job qstat listed, running and pending."""
    jobs = []
    for item in job_elements(result):
        native_id = child_text(item, "JB_job_number")
        if not JOB_ID.matches(native_id):
            continue
        jobs.append(QueuedJob(
            native_id=native_id,
            name=child_text(item, "JB_name"),
            owner=child_text(item, "JB_owner"),
            state=child_text(item, "state"),
            started_at=timestamp(child_text(item, "JAT_start_time"), tz),
            tasks=tuple(tasks(child_text(item, "tasks"))),
        ))
    return jobs


def parse_status(
    result: CommandResult, native_ids: Sequence[str], tz: tzinfo
) -> dict[str, JobStatus]:
    wanted = set(native_ids)
    found: dict[str, JobStatus] = {}
    for job in parse_jobs(result, tz):
        for native_id in job.ids:
            if native_id in wanted:
                state, reason = native_state(job.state)
                found[native_id] = JobStatus(
                    native_id, state, job.state, reason, started_at=job.started_at
                )
    return found
