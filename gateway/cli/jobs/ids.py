"""Job ids as people type them: a whole id, any unique start of one (`d3eca39f`, as
tables show), or ARRAY_INDEX for a task of a job array (`d3eca39f_3`), resolved by the
gateway among the jobs you may read (gateway.client.job_ids)."""

from __future__ import annotations

import typer

from gateway.cli.state import state
from gateway.client import job_ids as client_ids


def resolve_one(ctx: typer.Context, value: str) -> str:
    """Argument callback: the whole id of the job `value` names (see module)."""
    if ctx.resilient_parsing:  # shell completion: no requests
        return value
    with state(ctx).client() as client:
        return client.resolve_job_id(value)


def resolve_audited(ctx: typer.Context, value: str) -> str:
    """`resolve_one` among the jobs whose story you may read (`gridgate audit job`: a PI
    reads their projects' jobs there, not elsewhere)."""
    if ctx.resilient_parsing:
        return value
    with state(ctx).client() as client:
        return client.resolve_audited_job_id(value)


def resolve_many(ctx: typer.Context, values: list[str] | None) -> list[str]:
    """Argument callback: every value resolved, in order, duplicates dropped; nothing
    is done unless every one names a job."""
    if ctx.resilient_parsing or not values:
        return list(values or [])
    with state(ctx).client() as client:
        return list(dict.fromkeys(client.resolve_job_id(value) for value in values))


def resolve_targets(ctx: typer.Context, values: list[str], arrays: list[str]
                    ) -> tuple[list[str], list[str]]:
    """(job ids, job array ids) that `values` (jobs, ARRAY_INDEX tasks, or arrays, as
    Slurm's `scancel ARRAY_ID` takes them) and `arrays` (arrays only) name, in order,
    duplicates dropped; nothing is done unless every one names something."""
    if not values and not arrays:
        return [], []
    with state(ctx).client() as client:
        targets = [client_ids.resolve_target(client, value) for value in values]
        array_ids = [client_ids.resolve_array_id(client, value) for value in arrays]
    jobs = [t.id for t in targets if t.kind == "job"]
    array_ids = [t.id for t in targets if t.kind == "array"] + array_ids
    return list(dict.fromkeys(jobs)), list(dict.fromkeys(array_ids))
