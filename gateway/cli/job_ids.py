"""Job ids as people type them: a whole id, or any unique start of one (`d3eca39f`, as
tables show), resolved by the gateway among your own jobs (GET /jobs?id_prefix=...&mine)."""

from __future__ import annotations

import typer

from gateway.cli.state import state


def resolve_one(ctx: typer.Context, value: str) -> str:
    """Argument callback: the whole id of the job `value` names (see module)."""
    if ctx.resilient_parsing:  # shell completion: no requests
        return value
    with state(ctx).client() as client:
        return client.resolve_job_id(value)


def resolve_many(ctx: typer.Context, values: list[str] | None) -> list[str]:
    """Argument callback: every value resolved, in order, duplicates dropped; nothing
    is done unless every one names a job."""
    if ctx.resilient_parsing or not values:
        return list(values or [])
    with state(ctx).client() as client:
        return list(dict.fromkeys(client.resolve_job_id(value) for value in values))
