"""bqueues -json -o "...": queues and their load. Pure.

Format: IBM Spectrum LSF 10.1 `bqueues -o <fields> -json` (new in 10.1.0.2, like bjobs):
`{"COMMAND": "bqueues", "QUEUES": n, "RECORDS": [{"QUEUE_NAME": ..., "STATUS":
"Open:Active", "MAX": "-", "NJOBS": "0", "PEND": "0", "RUN": "0"}]}`.
"""

from __future__ import annotations

import json

from adapters.batch.text import integer, query_failed, text
from adapters.batch.types import QueueInfo
from adapters.errors import SiteUnavailable
from adapters.lsf.commands import LsfCommands
from adapters.transport import CommandResult

FIELDS = "queue_name status max njobs pend run"


def queues_command(commands: LsfCommands) -> tuple[str, ...]:
    return (commands.bqueues, "-json", "-o", FIELDS)


def parse_queues(result: CommandResult, default_queue: str | None) -> list[QueueInfo]:
    if result.exit_status != 0:
        raise query_failed(result)
    try:
        data = json.loads(text(result.stdout))
    except ValueError as exc:
        raise SiteUnavailable(f"bqueues printed unreadable JSON ({exc})") from exc
    found = []
    for record in data.get("RECORDS", []) if isinstance(data, dict) else []:
        if not isinstance(record, dict) or "ERROR" in record:
            continue
        name = str(record.get("QUEUE_NAME", ""))
        status = str(record.get("STATUS", ""))
        found.append(QueueInfo(
            name=name,
            default=name == default_queue,
            # "Open:Active" takes and dispatches jobs; Closed or Inact(ive) does not.
            available=status == "Open:Active",
            state=status,
            jobs_running=integer(str(record.get("RUN", ""))),
            jobs_pending=integer(str(record.get("PEND", ""))),
        ))
    return found
