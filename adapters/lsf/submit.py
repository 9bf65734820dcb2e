"""bsub with the script on stdin (`bsub < script`). Pure.

bsub prints "Job <123> is submitted to queue <normal>." (bsub(1); PSI/J's LSF executor
parses the same line), possibly after "Cannot connect to LSF. Please wait ..." lines.
"""

from __future__ import annotations

import re

from adapters.batch.text import submit_failed, text
from adapters.errors import SiteUnavailable
from adapters.transport import CommandResult

_SUBMITTED = re.compile(r"Job <(\d+)> is submitted")
TRANSIENT = (
    "LSF is down",
    "Cannot connect to LSF",
    "batch system daemon not responding",
    "Unable to contact",
)


def parse_submit(result: CommandResult) -> str:
    if result.exit_status != 0:
        raise submit_failed(result, TRANSIENT)
    match = _SUBMITTED.search(text(result.stdout))
    if match:
        return match.group(1)
    raise SiteUnavailable(f"bsub printed no job id: {text(result.stdout)!r}")
