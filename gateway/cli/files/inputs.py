"""Sending files from this machine: the transfer behind `gridgate upload`, and the local
inputs of `gridgate submit` (`source: ./pingpong.py`, `--input FILE`), which are
uploaded (resumable, verified) and sent to the gateway as `upload:ID`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from gateway.cli import render
from gateway.cli.errors import Interrupted
from gateway.cli.jobs.spec import local_image, local_inputs, with_image, with_uploads
from gateway.client.api import GatewayClient
from gateway.client.models import Upload
from gateway.client.uploads import CHUNK_BYTES, file_sha256, upload_file
from gateway.domain.sizes import short_size

InputOpt = Annotated[list[Path] | None, typer.Option(
    "--input", "-i", metavar="FILE", exists=True, dir_okay=False, readable=True,
    help="A file on this machine to upload and place in the job's directory under its "
         "name (repeatable).")]


@dataclass
class _Progress:
    """How far a transfer got, for the message when it is interrupted."""

    checksummed: bool = False
    offset: int = 0


def send_file(client: GatewayClient, file: Path, *, name: str | None = None,
              chunk_bytes: int = CHUNK_BYTES, resume: bool = True, reuse: bool = False,
              again: str = "run the same command again to resume it") -> Upload:
    """Checksum and upload `file` with progress bars on stderr; returns the complete
    upload. Ctrl-C raises `Interrupted` saying how far it got and that `again` resumes."""
    size = file.stat().st_size
    done = _Progress()
    try:
        with render.transfer_progress() as progress:
            hashing = progress.add_task(f"checksum {file.name}", total=size)
            sha = file_sha256(file, lambda n: progress.advance(hashing, n))
            done.checksummed = True
            progress.remove_task(hashing)
            sending = progress.add_task(f"upload {file.name}", total=size)

            def moved(offset: int) -> None:
                done.offset = offset
                progress.update(sending, completed=offset)

            return upload_file(client, file, name=name, sha256=sha, chunk_bytes=chunk_bytes,
                               resume=resume, reuse=reuse, on_offset=moved)
    except KeyboardInterrupt:
        if not done.checksummed:
            raise Interrupted(f"Stopped while checksumming {file}; nothing was sent.") \
                from None
        raise Interrupted(
            f"Upload of {file} stopped at {short_size(done.offset)} of {short_size(size)}; "
            f"the gateway keeps what arrived: {again}.") from None


def upload_image(client: GatewayClient, spec: Mapping[str, Any], base_dir: Path
                 ) -> dict[str, Any]:
    """`spec` with a `container.image` that names a SIF file on this machine uploaded (or a
    complete upload of the same file used again) and sent as `upload:ID`."""
    path = local_image(spec, base_dir)
    if path is None:
        return dict(spec)
    upload = send_file(client, path, reuse=True, again=(
        "nothing was submitted; run the same command again and the upload continues where "
        "it stopped"))
    render.stderr_console().print(f"Image {path} ({short_size(upload['size'])}) is upload "
                                  f"{upload['id']}")
    return with_image(spec, upload["id"])


def upload_inputs(client: GatewayClient, spec: Mapping[str, Any], base_dir: Path
                  ) -> dict[str, Any]:
    """`spec` with every input, and a container image, that names a file on this machine
    uploaded (or a complete upload of the same file used again) and sent as `upload:ID`."""
    found = local_inputs(spec, base_dir)
    local_image(spec, base_dir)  # a missing image is named before anything is sent
    spec = upload_image(client, spec, base_dir)
    if not found:
        return dict(spec)
    err = render.stderr_console()
    uploaded: dict[int, tuple[str, str]] = {}
    for item in found:
        upload = send_file(client, item.path, reuse=True, again=(
            "no job was submitted; run the same command again and the upload continues "
            "where it stopped"))
        err.print(f"Input {item.dest}: {item.path} ({short_size(upload['size'])}) is "
                  f"upload {upload['id']}")
        uploaded[item.index] = (upload["id"], item.dest)
    return with_uploads(spec, uploaded)
