"""qstat -xml -r -g d -u '*': every job of every user, with its hard requests. Pure.

Format: Son of Grid Engine 8.1.9 (source/clients/qstat/qstat_xml.c; recorded on the testbed):
the `job_list` elements of `qstat -xml` (JB_job_number, JB_name, JB_owner, state,
JAT_start_time or JB_submission_time, queue_name `<queue>@<host>`, slots), with `-r` the
job's `hard_request` elements (`<hard_request name="h_rt">1200</hard_request>`, seconds or
`[[H:]M:]S`) and `requested_pe`, and with `-g d` one element per array task
(`<tasks>2</tasks>`). Grid Engine makes no start estimate. A job without an h_rt request
runs under its queue's h_rt: its time limit is left unknown here.

Cores come from `qstat -g c` (adapters.sge.queues), the default of BaseDialect.
"""

from __future__ import annotations

from datetime import tzinfo

from adapters.batch.text import duration, integer, timestamp
from adapters.batch.types import job_phase
from adapters.errors import SiteUnavailable
from adapters.sge.commands import SgeCommands
from adapters.sge.states import native_state
from adapters.sge.status import JOB_ID, child_text, job_elements
from adapters.snapshot import SnapshotJob
from adapters.transport import CommandResult


def queue_jobs_command(commands: SgeCommands) -> tuple[str, ...]:
    # '*' is an argument, never a glob: argv elements are quoted on the site.
    return (commands.qstat, "-xml", "-r", "-g", "d", "-u", "*")


def parse_queue_jobs(result: CommandResult, tz: tzinfo) -> list[SnapshotJob]:
    """Pending and running jobs (array tasks as `<job>.<task>`); unknown states left out."""
    jobs = []
    for item in job_elements(result):
        number = child_text(item, "JB_job_number")
        if not JOB_ID.matches(number):
            raise SiteUnavailable(f"qstat -xml listed a job without a job number: {number!r}")
        task = child_text(item, "tasks")
        raw = child_text(item, "state")
        phase = job_phase(native_state(raw)[0]) if raw else None
        if phase is None:
            continue
        requests = {e.get("name"): e.text or "" for e in item.iter("hard_request")}
        limit = requests.get("h_rt") or requests.get("s_rt")
        queue = child_text(item, "queue_name").partition("@")[0] or child_text(
            item, "hard_req_queue") or None
        jobs.append(SnapshotJob(
            native_id=f"{number}.{task}" if JOB_ID.matches(task) else number,
            phase=phase,
            raw_state=raw,
            cores=integer(child_text(item, "slots")),
            time_limit_seconds=duration(limit),
            submitted_at=timestamp(child_text(item, "JB_submission_time"), tz),
            started_at=timestamp(child_text(item, "JAT_start_time"), tz),
            queue=queue,
            user=child_text(item, "JB_owner") or None,
            name=child_text(item, "JB_name") or None,
        ))
    return jobs
