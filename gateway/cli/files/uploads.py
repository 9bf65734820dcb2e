"""Upload commands: `gridgate upload FILE` (resumable, verified) and `gridgate uploads`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.files.inputs import send_file
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.client.models import Upload
from gateway.client.uploads import CHUNK_BYTES
from gateway.domain.sizes import short_size


def upload(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to send.",
                                         exists=True, dir_okay=False, readable=True)],
    name: Annotated[str | None, typer.Option(
        help="Name of the upload (default: the file's name).")] = None,
    chunk_mib: Annotated[int, typer.Option(
        "--chunk-mib", min=1, max=64, help="Chunk size in MiB.")] = CHUNK_BYTES // 2**20,
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Start over instead of continuing an interrupted upload.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Send FILE to the gateway store, in chunks, and verify its sha256 there.

    An interrupted upload of the same file is continued from the last byte the gateway
    holds (run the command again). Prints the upload id, for job inputs.
    """
    with state(ctx).client() as client:
        done = send_file(client, file, name=name, chunk_bytes=chunk_mib * 2**20,
                         resume=not fresh, again="run the same command again to resume it "
                         "(--fresh starts over)")
    if json_out:
        render.print_json(done)
        return
    render.stderr_console().print(
        f"Uploaded {file} ({short_size(done['size'])}, sha256 {done['sha256']}) as upload "
        f"{done['id']}")
    print(done["id"])



def uploads_table(items: Sequence[Upload]) -> Grid:
    """ID, name, size, state (with how much arrived), expiry; `--json` has the rest."""
    table = Grid([Col("ID"), Col("NAME", text=True, wrap=True), Col("SIZE"), Col("STATE"),
                  Col("EXPIRES", drop=1)])
    styles = {"open": "yellow", "complete": "green", "expired": "red"}
    for u in items:
        state = Text(u["state"], style=styles.get(u["state"], ""))
        if u["state"] == "open":
            state.append(f" {u['offset'] * 100 // max(u['size'], 1)}%")
        table.add_row(Text(u["id"]), Text(u["name"]), Text(short_size(u["size"])), state,
                      Text(render.when(u.get("expires_at"))))
    return table


def list_uploads(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Your uploads in the gateway store, newest first."""
    with state(ctx).client() as client:
        items = client.list_uploads()
    if json_out:
        render.print_json({"items": items})
        return
    if not items:
        render.stderr_console().print("No uploads.")
        return
    render.stdout_console().print(uploads_table(items))


def delete(ctx: typer.Context,
           upload_id: Annotated[str, typer.Argument(metavar="UPLOAD", help="Upload id.")]
           ) -> None:
    """Delete an upload (and free its share of your store quota)."""
    with state(ctx).client() as client:
        client.delete_upload(upload_id)
    render.stderr_console().print(f"Deleted upload {upload_id}")


__all__ = ["delete", "list_uploads", "upload"]
