"""qsub -terse with the script on stdin. Pure."""

from __future__ import annotations

import re

from adapters.batch.text import lines, submit_failed, text
from adapters.errors import SiteUnavailable
from adapters.transport import CommandResult

# qsub -terse prints the job id, or "<id>.<first>-<last>:<step>" for an array job.
_TERSE = re.compile(r"(\d+)(?:\.\S+)?")
# Messages meaning qmaster could not be reached: the job was probably not taken.
TRANSIENT = (
    "unable to contact qmaster",
    "unable to send message to qmaster",
    "commlib error",
    "failed receiving gdi request",
    "got send error",
    "Connection refused",
)


def parse_submit(result: CommandResult) -> str:
    """The job id qsub printed; SubmitRejected with its own message otherwise."""
    if result.exit_status != 0:
        raise submit_failed(result, TRANSIENT)
    for line in lines(result.stdout):
        match = _TERSE.fullmatch(line)
        if match:
            return match.group(1)
    raise SiteUnavailable(f"qsub printed no job id: {text(result.stdout)!r}")
