"""qstat -Q -f -F json: queues, their limits and load. Pure.

Format: `{"Queue": {"<name>": {attribute: value}}}` (qstat.1B; PP-483), attributes of
pbs_queue_attributes(7B): queue_type, enabled, started, resources_max (walltime, nodect,
...), total_jobs and state_count ("Transit:0 Queued:1 Held:0 Waiting:0 Running:2 ...").
"""

from __future__ import annotations

import re
from typing import Any

from adapters.batch.text import duration, integer
from adapters.batch.types import QueueInfo
from adapters.pbs.commands import PbsCommands
from adapters.pbs.status import load_json
from adapters.transport import CommandResult

_COUNT = re.compile(r"(\w+):(\d+)")


def queues_command(commands: PbsCommands) -> tuple[str, ...]:
    return (commands.qstat, "-Q", "-f", "-F", "json")


def _true(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "t", "y", "yes")


def parse_queues(result: CommandResult, default_queue: str | None) -> list[QueueInfo]:
    found = []
    for name, attrs in load_json(result, "Queue").items():
        if not isinstance(attrs, dict) or str(attrs.get("queue_type", "")).lower() != "execution":
            continue
        limits = attrs.get("resources_max") or {}
        limits = limits if isinstance(limits, dict) else {}
        counts = {k: int(v) for k, v in _COUNT.findall(str(attrs.get("state_count", "")))}
        available = _true(attrs.get("enabled")) and _true(attrs.get("started"))
        found.append(QueueInfo(
            name=name,
            default=name == default_queue,
            available=available,
            state="enabled, started" if available else "disabled or stopped",
            max_walltime=duration(str(limits.get("walltime", ""))),
            max_nodes=integer(str(limits.get("nodect", ""))),
            jobs_running=counts.get("Running"),
            jobs_pending=None if not counts else counts.get("Queued", 0) + counts.get("Held", 0),
        ))
    return found
