"""Job dependencies as Slurm has them (workflows.dependencies): what the jobs and job
arrays a job depends on have become, checked at submit (each must exist and be visible to
the submitter) and by the worker's gate step (gateway.services.jobs.gates).

A dependency on a job array means all its tasks (workflows.dependencies.array_outcome).
A dependency that can never be satisfied leaves the job ACCEPTED with the reason
DependencyNeverSatisfied, as Slurm does, until its owner cancels it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import Connection

from adapters.reasons import because
from gateway.domain.errors import Invalid
from gateway.domain.job_relations import Gate, JobDependency
from gateway.domain.principal import Principal
from gateway.domain.states import JobState, Reason
from gateway.repositories.jobs import relations as repo
from gateway.services.jobs.queries import sees_all
from workflows.dependencies import (
    DependencyStatus,
    Ended,
    Readiness,
    array_outcome,
    dependency_status,
)


def _end(state: str) -> Ended | None:
    return Ended(state) if JobState(state).is_final else None


def ends(conn: Connection, ids: Collection[str], owner_id: str | None
         ) -> dict[str, Ended | None]:
    """How each job or job array of `ids` ended (None: not yet), for those that exist
    (and are owned by `owner_id`, unless None)."""
    found: dict[str, Ended | None] = {
        job_id: _end(state) for job_id, state in repo.job_states(conn, ids, owner_id).items()}
    rest = set(ids) - found.keys()
    for array_id, states in repo.array_states(conn, rest, owner_id).items():
        # Its distinct task states are enough: the outcome depends on no count.
        found[array_id] = array_outcome(_end(s) for s in states) if states else None
    return found


def check_at_submit(conn: Connection, principal: Principal,
                    dependencies: Sequence[JobDependency]) -> DependencyStatus:
    """The new job's dependencies as they stand; Invalid (422) naming the entry for a
    job that does not exist or that the submitter may not see (the same answer)."""
    owner = None if sees_all(principal) else principal.user_id
    found = ends(conn, {d.job for d in dependencies}, owner)
    for i, dep in enumerate(dependencies):
        if dep.job not in found:
            raise Invalid(f"depends_on[{i}].job: you have no job or job array {dep.job}.",
                          field=f"depends_on[{i}].job")
    return dependency_status(dependencies, found)


def gate_at_submit(conn: Connection, principal: Principal,
                   dependencies: Sequence[JobDependency]) -> tuple[Gate | None, str | None]:
    """The gate and reason of a new job with these dependencies (see check_at_submit)."""
    if not dependencies:
        return None, None
    return gate_of(check_at_submit(conn, principal, dependencies))


def gate_of(status: DependencyStatus) -> tuple[Gate | None, str | None]:
    """The gate and reason for a job whose dependencies stand at `status` (None, None:
    satisfied)."""
    if status.readiness is Readiness.WAITING:
        return Gate.DEPENDENCY, because(Reason.DEPENDENCY, status.reason)
    if status.readiness is Readiness.NEVER:
        return Gate.NEVER, because(Reason.DEPENDENCY_NEVER_SATISFIED, status.reason)
    return None, None
