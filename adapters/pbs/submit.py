"""qsub with the script on stdin. Pure. qsub prints the job id, e.g. `123.pbsserver`."""

from __future__ import annotations

from adapters.batch.text import lines, submit_failed, text
from adapters.errors import SiteUnavailable
from adapters.transport import CommandResult
from rules.text import TextRule

JOB_ID = TextRule("PBS job id", r"[0-9]+(?:\[[0-9]*\])?(?:\.[A-Za-z0-9._-]+)?",
                  "digits and the server name, e.g. 123.pbsserver")
# Messages meaning the server could not be reached: the job was probably not taken.
TRANSIENT = (
    "cannot connect to server",
    "Connection refused",
    "pbs_iff",
    "Server not available",
    "communication failure",
    "Premature end of message",
)


def parse_submit(result: CommandResult) -> str:
    if result.exit_status != 0:
        raise submit_failed(result, TRANSIENT)
    for line in lines(result.stdout):
        if JOB_ID.matches(line):
            return line
    raise SiteUnavailable(f"qsub printed no job id: {text(result.stdout)!r}")
