"""A job's outputs (the files its spec's `outputs` globs collect): `gridgate outputs JOB`
lists them, `gridgate fetch JOB [PATTERN] -o DIR` downloads them verified, and
`gridgate outputs-delete JOB` drops them from the gateway store."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress, TaskID
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs.commands import JobArg, JsonOpt
from gateway.cli.state import state
from gateway.client.downloads import download_output, select_files
from gateway.client.errors import ClientError
from gateway.client.models import JobOutput
from gateway.domain.sizes import short_size

PatternArg = Annotated[str | None, typer.Argument(
    metavar="[PATTERN]", help="Only outputs whose path (or name) matches this glob.")]


def _advance(progress: Progress, task: TaskID, done: int) -> None:
    progress.update(task, completed=done)


def fetch(
    ctx: typer.Context,
    job_id: JobArg,
    pattern: PatternArg = None,
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="DIR", help="Directory to write into (paths kept).")]
    = Path("."),
    json_out: JsonOpt = False,
) -> None:
    """Download a job's collected outputs into DIR and verify each sha256.

    An interrupted fetch continues where it stopped when run again. Outputs the job
    keeps on its site are streamed from there through the gateway.
    """
    with state(ctx).client() as client:
        files = select_files(client.job_outputs(job_id), pattern)
        if not files:
            what = f"matching {pattern!r}" if pattern else "at all"
            raise ClientError(f"Job {job_id} has no collected outputs {what} (outputs are "
                              "collected when the run ends, by the spec's output globs).")
        written: list[dict[str, Any]] = []
        with render.transfer_progress() as progress:
            for item in files:
                task = progress.add_task(item["path"], total=item["size"])
                target = download_output(client, job_id, item, output,
                                       on_done=partial(_advance, progress, task))
                progress.remove_task(task)
                written.append({**item, "file": str(target), "verified": True})
    if json_out:
        render.print_json({"items": written})
        return
    for entry in written:
        print(entry["file"])
    render.stderr_console().print(
        f"Fetched {len(written)} file(s) of job {job_id}, sha256 verified.")


def outputs_table(items: list[JobOutput]) -> Grid:
    """Path, size, where it is kept (the gateway store or the site) and its sha256 (left
    out first on a narrow terminal); a long path wraps."""
    table = Grid([Col("PATH", text=True, wrap=True, least=24), Col("SIZE"), Col("KEPT"),
                  Col("SHA256", drop=1)])
    for item in items:
        kept = "gateway" if item["location"] == "gateway" else f"site {item['site']}"
        table.add_row(Text(item["path"]), Text(short_size(item["size"])), Text(kept),
                      Text(item["sha256"][:12]))
    return table


def list_outputs(ctx: typer.Context, job_id: JobArg, pattern: PatternArg = None,
                 json_out: JsonOpt = False) -> None:
    """List a job's collected outputs: path, size, where each is kept, sha256."""
    with state(ctx).client() as client:
        items = select_files(client.job_outputs(job_id), pattern)
    if json_out:
        render.print_json({"items": items})
        return
    if not items:
        render.stderr_console().print(f"Job {job_id} has no collected outputs.")
        return
    render.stdout_console().print(outputs_table(items))


def delete_outputs(ctx: typer.Context, job_id: JobArg) -> None:
    """Delete a finished job's outputs from the gateway store (freeing your store quota).
    Outputs the job keeps on its site stay there and stay listed."""
    with state(ctx).client() as client:
        client.delete_job_outputs(job_id)
    render.stderr_console().print(f"Deleted the fetched outputs of job {job_id}")
