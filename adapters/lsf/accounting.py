"""LSF accounting: none is read.

`bjobs -a` (adapters.lsf.status) lists finished jobs with their exit code for LSF's
CLEAN_PERIOD (one hour by default), well beyond a gateway's polling interval. The
accounting commands (bacct, bhist) print free-form reports; a job older than that
window is left out of status answers instead of being guessed at.
"""

from __future__ import annotations


def accounting_commands() -> list[tuple[str, ...]]:
    return []
