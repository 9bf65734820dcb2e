"""The sizes the gateway accepts: parameters, never constants inside the checks.

The gateway builds one `Limits` from its settings and passes it in; the defaults here are
what a fresh install uses. Each is checked before the work it bounds is done (a matrix's
size before it is expanded, an array's task count before its indices are listed), so an
oversized request costs nothing but its refusal.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from workflows.errors import WorkflowError

# Slurm's MaxArraySize may not exceed 4000001, so no Slurm site takes an index above 4000000.
SLURM_MAX_ARRAY_INDEX = 4_000_000


@dataclass(frozen=True)
class Limits:
    """How large a workflow, a job array or a dependency list may be."""

    max_steps: int = 200  # steps written in one workflow
    max_matrix: int = 256  # instances one step's matrix expands to
    max_instances: int = 2_000  # instances of a whole workflow after expansion
    max_retries: int = 10  # `retry.max` of one step
    max_array_tasks: int = 10_000  # tasks of one job array
    max_array_index: int = SLURM_MAX_ARRAY_INDEX  # highest array index
    max_dependencies: int = 64  # jobs one job may depend on
    max_text: int = 65_536  # characters of an array spec or a --dependency option

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 1:
                raise WorkflowError(f"limit {f.name} must be at least 1")


DEFAULT_LIMITS = Limits()
