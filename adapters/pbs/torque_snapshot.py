"""TORQUE's whole queue and cores: `qstat -f -x` and `pbsnodes -x`. Pure.

Jobs: `qstat -f -x` without ids lists every job the server holds (TORQUE src/cmds/qstat.c,
create_full_job_xml; the format of adapters.pbs.torque), of all users unless the server
sets query_other_jobs false; completed jobs (state C, kept for keep_completed) are left
out. Cores of a job: its `Resource_List/nodes` spec (`2:ppn=4`, `n1:ppn=2+n2:ppn=2`; a
node without ppn is one core), else `procs`, else `ncpus`. Times are epoch seconds.
TORQUE itself makes no start estimate (Moab's `showstart` does, outside TORQUE).

Cores: `pbsnodes -x` (TORQUE src/cmds/pbsnodes.c, the XML of `-x`: `<Data><Node><name>..
</name><state>free</state><np>2</np><jobs>0-1/203.server</jobs>...</Node></Data>`): a
node's `np` cores, of which those named in `jobs` (`<cores>/<job id>` items, cores as
`0`, `0-1` or `0,2`) are busy; a node down, offline or unknown has none free.
"""

from __future__ import annotations

import re
from datetime import UTC

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from adapters.batch.text import duration, integer, query_failed, text, timestamp
from adapters.batch.types import job_phase
from adapters.errors import SiteUnavailable
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import native_state
from adapters.pbs.submit import JOB_ID
from adapters.pbs.torque import COMPLETED, child_text, job_elements
from adapters.snapshot import JobPhase, SiteCores, SnapshotJob
from adapters.transport import CommandResult

_BUSY = re.compile(r"([0-9][0-9,-]*)/[^,\s]+")
_NOT_UP = frozenset({"down", "offline", "unknown"})


def queue_jobs_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.qstat, "-f", "-x")


def job_cores(nodes: str) -> int | None:
    """The cores of a `nodes=` spec: the sum over `+` chunks of nodes times ppn; None for
    a spec that is not one."""
    total = 0
    for chunk in nodes.split("+"):
        first, *properties = chunk.strip().split(":")
        ppn = [p.removeprefix("ppn=") for p in properties if p.startswith("ppn=")]
        if not first or len(ppn) > 1 or not all(p.isdigit() for p in ppn):
            return None
        total += (int(first) if first.isdigit() else 1) * (int(ppn[0]) if ppn else 1)
    return total or None


def parse_queue_jobs(result: CommandResult) -> list[SnapshotJob]:
    """Queued and running jobs; completed ones are left out."""
    jobs = []
    for job in job_elements(result):
        native_id = child_text(job, "Job_Id")
        if not JOB_ID.matches(native_id):
            raise SiteUnavailable(f"qstat -x listed a job id TORQUE does not issue: {native_id!r}")
        raw = child_text(job, "job_state")
        phase = None if raw in ("", COMPLETED) else job_phase(native_state(raw)[0])
        if phase is None:
            continue
        wanted = job.find("Resource_List")
        spec = child_text(wanted, "nodes") if wanted is not None else ""
        cores = job_cores(spec) if spec else None
        if cores is None and wanted is not None:
            cores = integer(child_text(wanted, "procs")) or integer(child_text(wanted, "ncpus"))
        owner = child_text(job, "Job_Owner").partition("@")[0]
        jobs.append(SnapshotJob(
            native_id=native_id,
            phase=phase,
            raw_state=raw,
            cores=cores,
            nodes=integer(child_text(wanted, "nodect")) if wanted is not None else None,
            time_limit_seconds=duration(child_text(wanted, "walltime"))
            if wanted is not None else None,
            submitted_at=timestamp(child_text(job, "qtime"), UTC),
            started_at=timestamp(child_text(job, "start_time"), UTC)
            if phase is JobPhase.RUNNING else None,
            queue=child_text(job, "queue") or None,
            user=owner or None,
            name=child_text(job, "Job_Name") or None,
        ))
    return jobs


def cores_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.pbsnodes, "-x")


def _busy(jobs: str) -> int:
    count = 0
    for match in _BUSY.finditer(jobs):
        for part in match[1].split(","):
            low, _, high = part.partition("-")
            if low.isdigit():
                count += int(high) - int(low) + 1 if high.isdigit() else 1
    return count


def parse_cores(result: CommandResult) -> SiteCores:
    """Every node's np, and the cores no job holds on nodes that are up."""
    if result.exit_status != 0:
        raise query_failed(result)
    body = text(result.stdout).strip()
    try:
        root = ElementTree.fromstring(body) if body else None
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise SiteUnavailable(f"pbsnodes -x printed unreadable XML ({exc}): {body[:200]!r}") \
            from exc
    if root is None or root.tag != "Data":
        raise SiteUnavailable(f"pbsnodes -x printed no <Data> of nodes: {body[:200]!r}")
    total = free = 0
    nodes = root.findall("Node")
    for node in nodes:
        cores = integer(child_text(node, "np"))
        if cores is None:
            raise SiteUnavailable(f"pbsnodes -x gave node {child_text(node, 'name')!r} no np")
        states = {s.strip() for s in child_text(node, "state").split(",")}
        idle = 0 if states & _NOT_UP else max(cores - _busy(child_text(node, "jobs")), 0)
        total, free = total + cores, free + idle
    return SiteCores(total, free) if nodes else SiteCores(None, None)
