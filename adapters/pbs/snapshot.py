"""qstat -f -F json -t and pbsnodes -a -F json: the whole queue and the cores. Pure.

Jobs: `qstat -f -F json -t` (OpenPBS doc/man1/qstat.1B: -t lists array subjobs; the JSON of
PP-483 "Enhance output of qstat"): every job the server holds, of all users (unless the
server's query_other_jobs is false), attributes per pbs_job_attributes(7B): job_state,
queue, Job_Owner `user@host`, Job_Name, qtime, stime, Resource_List (ncpus, nodect,
walltime) and, for a pending job the scheduler has placed in its calendar (strict
ordering or backfilling), `estimated` with `start_time` and `exec_vnode`. Resource
attributes are nested objects in the JSON, as `Resource_List` is. Times are asctime in the
server's local time ("Sat Nov 22 02:15:00 2025"). An array's parent (`123[].server`) is
left out: its subjobs (`123[1].server`) are listed themselves.

Cores: `pbsnodes -a -F json` (OpenPBS doc/man8/pbsnodes.8B: `{"timestamp", "pbs_version",
"pbs_server", "nodes": {"<vnode>": {"state", "resources_available": {"ncpus"},
"resources_assigned": {"ncpus"}, "queue", ...}}}`). A node's free cores are its available
less its assigned ncpus, counted only when it is up (not down, offline, ...). A node tied
to a queue (its `queue` attribute or `resources_available.Qlist`) adds to that queue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import tzinfo
from typing import Any

from adapters.batch.text import duration, integer, text, timestamp
from adapters.batch.types import job_phase
from adapters.errors import SiteUnavailable
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import native_state
from adapters.pbs.status import load_json
from adapters.pbs.submit import JOB_ID
from adapters.snapshot import JobPhase, QueueInfo, SiteCores, SnapshotJob
from adapters.transport import CommandResult

# Node states in which a node takes no new job (pbs_node_attributes(7B), "state").
_NOT_UP = frozenset({"down", "offline", "state-unknown", "stale", "unresolvable",
                     "maintenance", "sleep", "provisioning", "wait-provisioning"})


def queue_jobs_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.qstat, "-f", "-F", "json", "-t")


def _section(attrs: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = attrs.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict | list) else str(value)


def _number(value: Any) -> int | None:
    return None if isinstance(value, bool) else integer(_text(value))


def parse_queue_jobs(result: CommandResult, tz: tzinfo) -> list[SnapshotJob]:
    """Pending and running jobs and subjobs; finished ones (job history) left out."""
    jobs = []
    for native_id, attrs in _objects(result, "Jobs"):
        if not JOB_ID.matches(native_id):
            raise SiteUnavailable(f"qstat listed a job id PBS does not issue: {native_id!r}")
        if "[]" in native_id:
            continue
        raw = str(attrs.get("job_state", ""))
        phase = job_phase(native_state(raw)[0]) if raw else None
        if phase is None:
            continue
        wanted = _section(attrs, "Resource_List")
        owner = _text(attrs.get("Job_Owner"))
        started = timestamp(_text(attrs.get("stime")), tz)
        estimated = timestamp(_text(_section(attrs, "estimated").get("start_time")), tz)
        jobs.append(SnapshotJob(
            native_id=native_id,
            phase=phase,
            raw_state=raw,
            cores=_number(wanted.get("ncpus")),
            nodes=_number(wanted.get("nodect")),
            time_limit_seconds=duration(_text(wanted.get("walltime"))),
            submitted_at=timestamp(_text(attrs.get("qtime") or attrs.get("ctime")), tz),
            started_at=started if phase is JobPhase.RUNNING else None,
            estimated_start=estimated if phase is JobPhase.PENDING else None,
            queue=_text(attrs.get("queue")),
            user=owner.partition("@")[0] if owner else None,
            name=_text(attrs.get("Job_Name")),
        ))
    return jobs


def cores_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.pbsnodes, "-a", "-F", "json")


def parse_cores(result: CommandResult) -> SiteCores:
    """All nodes' ncpus, the unassigned ones of nodes that are up, and per queue where a
    node names its queue."""
    total = free = 0
    queues: dict[str, list[int]] = {}
    nodes = _objects(result, "nodes")
    for name, attrs in nodes:
        available = _section(attrs, "resources_available")
        ncpus = _number(available.get("ncpus"))
        if ncpus is None:
            raise SiteUnavailable(f"pbsnodes gave node {name!r} no resources_available.ncpus")
        assigned = _number(_section(attrs, "resources_assigned").get("ncpus")) or 0
        states = {s.strip() for s in str(attrs.get("state", "")).split(",")}
        idle = 0 if states & _NOT_UP else max(ncpus - assigned, 0)
        total, free = total + ncpus, free + idle
        queue = _text(attrs.get("queue")) or _text(available.get("Qlist"))
        for named in (queue or "").split(","):
            if named.strip():
                counts = queues.setdefault(named.strip(), [0, 0])
                counts[0] += ncpus
                counts[1] += idle
    if not nodes:
        return SiteCores(None, None)
    return SiteCores(total, free, tuple(
        QueueInfo(name, cpus_total=cpus, cpus_idle=idle) for name, (cpus, idle) in queues.items()))


def _objects(result: CommandResult, key: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects under `key` of a PBS JSON answer; anything else there is refused."""
    section = load_json(result, key)
    body = text(result.stdout).strip()
    # No `key` is an empty list (no jobs: qstat prints only the header fields), but only
    # in an answer that is PBS's at all.
    data = json.loads(body, strict=False) if not section and body else {"pbs_server": ""}
    if not isinstance(data, dict) or "pbs_server" not in data:
        raise SiteUnavailable(f"not an answer of PBS: {body[:200]!r}")
    found: list[tuple[str, Mapping[str, Any]]] = []
    for name, attrs in section.items():
        if not isinstance(attrs, dict):
            raise SiteUnavailable(f"PBS listed {key} {name!r} without its attributes")
        found.append((str(name), attrs))
    return found
