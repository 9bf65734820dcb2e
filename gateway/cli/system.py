"""Gateway-wide reads: sites, health and the job spec's schema."""

from __future__ import annotations

import typer

from gateway.cli import render
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state


def sites(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """List the sites jobs can run at: their status and live load (queued and running
    jobs, free cores, and the predicted wait of a 1-node, 1-hour job, median and 95%
    bound, at the last queue snapshot a routing pass took)."""
    with state(ctx).client() as client:
        items = client.sites()
    if json_out:
        render.print_json({"items": items})
        return
    console = render.stdout_console()
    console.print(render.sites_table(items))
    console.print()
    console.print(render.load_table(items))


def health(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Check that the gateway is up and reaches its database (no login needed)."""
    with state(ctx).client(authenticated=False) as client:
        info = client.health()
    if json_out:
        render.print_json(info)
        return
    render.stdout_console().print(
        f"{state(ctx).gateway}: {info.get('status')} (database {info.get('database')}, "
        f"version {info.get('version')})")


def schema(ctx: typer.Context) -> None:
    """Print the JSON Schema of a job spec."""
    with state(ctx).client(authenticated=False) as client:
        render.print_json(client.job_spec_schema())
