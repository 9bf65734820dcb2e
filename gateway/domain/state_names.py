"""The names a job-state filter accepts: the gateway's states, and Slurm's state names and
codes (what `squeue -t` and `sacct -s` take) for the states they stand for.

The API reads them (GET /jobs?state=PD,R), so REST users and the CLI agree on one
mapping; the CLI prints it in `gridgate list --help`.
"""

from __future__ import annotations

from collections.abc import Iterable

from gateway.domain.errors import Invalid
from gateway.domain.states import JobState

# Not yet running: routed or being routed, staging in, or in a site's queue.
WAITING = (JobState.ACCEPTED, JobState.STAGING_IN, JobState.QUEUED)

# Slurm's names and codes -> the gateway's states (RUNNING, COMPLETED, FAILED and
# CANCELLED are the same words in both). Slurm's other ends (TIMEOUT,
# NODE_FAIL, OUT_OF_MEMORY, ...) are the gateway's FAILED with that reason: FAILED finds
# them, and no alias claims to find only them.
SLURM_NAMES: dict[str, tuple[JobState, ...]] = {
    "PENDING": WAITING, "PD": WAITING,
    "R": (JobState.RUNNING,),
    "COMPLETING": (JobState.STAGING_OUT,), "CG": (JobState.STAGING_OUT,),
    "CD": (JobState.COMPLETED,),
    "CA": (JobState.CANCELLED,),
    "F": (JobState.FAILED,),
}


def accepted_names() -> str:
    """Every accepted name, for a help text or an error: the gateway's states, then each
    alias with what it stands for."""
    names: dict[tuple[JobState, ...], list[str]] = {}
    for name, states in SLURM_NAMES.items():
        names.setdefault(states, []).append(name)
    aliases = "; ".join(f"{'/'.join(alias)} = {' + '.join(s.value for s in states)}"
                        for states, alias in names.items())
    return f"{', '.join(s.value for s in JobState)}; Slurm's: {aliases}"


def parse_states(values: Iterable[str]) -> frozenset[JobState]:
    """The states a filter names: each value a name or a comma-separated list of names,
    in any case; empty when none is given (no filter)."""
    found: set[JobState] = set()
    for value in values:
        for word in value.split(","):
            name = word.strip().upper()
            if not name:
                continue
            if name in JobState.__members__:
                found.add(JobState(name))
            elif name in SLURM_NAMES:
                found.update(SLURM_NAMES[name])
            else:
                raise Invalid(f"Unknown job state {word.strip()!r}; accepted: "
                              f"{accepted_names()} (a comma-separated list of them, in any "
                              "case).", field="state")
    return frozenset(found)
