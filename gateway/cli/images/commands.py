"""`gridgate image`: build a SIF container image from a root file system or a definition,
inspect one (partitions, environment, MPI family and ABI, digest), verify its digest, and
extract its SquashFS partition for Charliecloud's `ch-run`. Runs on this machine only.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from containers.errors import DefinitionError, DigestMismatch, SifFormatError
from containers.image.digest import PREFIX, verify_sha256
from containers.image.sif import arch_of_machine, copy_object, read_sif
from gateway.cli import errors, render
from gateway.cli.images.sif_build import ImageError, build_image
from gateway.cli.images.sif_inspect import inspect_image
from gateway.domain.sizes import human_bytes, short_size

image_app = typer.Typer(
    help="Container images (SIF): build, inspect, verify, extract. Local: no gateway.",
    no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
ImageArg = Annotated[Path, typer.Argument(metavar="IMAGE", help="A SIF image file.")]
LOCAL_ERRORS = (ImageError, SifFormatError, DefinitionError, DigestMismatch, ValueError,
                OSError)


def _fail(exc: Exception) -> typer.Exit:
    if isinstance(exc, OSError) and exc.filename:
        return errors.fail(f"error: {exc.filename}: {exc.strerror or exc}.")
    return errors.fail(f"error: {exc}")


def _host_arch() -> str:
    try:
        return arch_of_machine(platform.machine())
    except SifFormatError:
        return "unknown"


@image_app.command("build")
def build(
    source: Annotated[Path, typer.Argument(
        metavar="DIR|DEFFILE",
        help="A directory holding a root file system, or a YAML definition "
             "(from: DIR or .sif; files: {host: /image/path}; environment: {NAME: value}).")],
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="IMAGE.sif", help="The SIF image to write.")],
    arch: Annotated[str, typer.Option(
        help="The partition's architecture (Go names: amd64, arm64, ...); default: this "
             "machine's.")] = "",
    force: Annotated[bool, typer.Option("--force", help="Replace IMAGE.sif.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Build a SIF image from a root file system or a definition.

    The root file system becomes a SquashFS primary system partition (what Apptainer
    runs; Charliecloud runs the same partition); the definition and its environment are
    stored beside it. Needs mksquashfs (squashfs-tools) and siftool. Prints the digest.
    """
    console = render.stderr_console()
    try:
        built = build_image(source, output, arch=arch or _host_arch(), force=force,
                            say=lambda line: console.print(f"{line} ..."))
    except LOCAL_ERRORS as exc:
        raise _fail(exc) from None
    if json_out:
        render.print_json({"path": str(built.path), "digest": PREFIX + built.sha256,
                           "size": built.size, "partition": {
                               "offset": built.partition_offset, "size": built.partition_size},
                           "environment": built.environment})
        return
    console.print(f"Built {built.path} ({short_size(built.size)}); primary partition "
                  f"SquashFS at byte {built.partition_offset}.")
    print(f"{PREFIX}{built.sha256}")


def _objects_table(objects: list[dict[str, Any]]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "TYPE", "GROUP", "LINK", "OFFSET", "SIZE", "DETAILS"):
        table.add_column(column, justify="right" if column in ("OFFSET", "SIZE") else "left")
    for obj in objects:
        part = obj["partition"]
        details = obj["name"]
        if part is not None:
            details = (f"{part['fs']}/{part['type']}/{part['arch']}"
                       + (" (primary)" if part["primary"] else ""))
        elif obj["signature_hash"]:
            details = f"{obj['signature_hash']} {obj['name']}".strip()
        table.add_row(str(obj["id"]), obj["type"], str(obj["group"] or "-"),
                      str(obj["link"] or "-"), str(obj["offset"]), str(obj["size"]), details)
    return table


def _print_inspection(info: dict[str, Any]) -> None:
    console = render.stdout_console()
    sif, mpi = info["sif"], info["mpi"]
    rows = [("Image", info["path"]), ("Digest", info["digest"]),
            ("Size", human_bytes(info["size"])),
            ("SIF", f"version {sif['version']}, {sif['arch']}, id {sif['id']}, created "
                    f"{sif['created_at']}"),
            ("MPI", mpi.get("summary") or f"unknown: {mpi['error']}")]
    primary = info["primary_partition"]
    if primary is not None and not primary["squashfs_magic"]:
        rows.append(("Warning", "the primary partition does not start with a SquashFS "
                                "superblock: the image is damaged"))
    env = info["environment"]
    rows.append(("Environment", " ".join(f"{k}={v}" for k, v in env.items()) or "-"))
    rows.append(("Definition", "stored" if info["definition"] is not None else "-"))
    width = max(len(name) for name, _ in rows) + 2
    for name, value in rows:
        console.print(f"{name:<{width}}{value}", soft_wrap=True)
    console.print("Objects (partitions, definition, environment, signatures):")
    console.print(_objects_table(info["objects"]))


@image_app.command("inspect")
def inspect(image: ImageArg, json_out: JsonOpt = False) -> None:
    """Partitions, environment, MPI family and ABI, and digest of a SIF image.

    The MPI is read from the library names inside (MPICH ABI libmpi.so.12, Open MPI
    libmpi.so.40); the digest is the sha256 of the whole file, as uploads compute it.
    """
    try:
        info = inspect_image(image)
    except LOCAL_ERRORS as exc:
        raise _fail(exc) from None
    if json_out:
        render.print_json(info)
    else:
        _print_inspection(info)


@image_app.command("verify")
def verify(
    image: ImageArg,
    digest: Annotated[str, typer.Argument(
        metavar="DIGEST", help="The expected sha256: sha256:HEX or HEX.")],
) -> None:
    """Check IMAGE against its expected sha256 digest.

    A flipped byte anywhere fails; exit 1 when IMAGE is not the one DIGEST names.
    """
    try:
        with image.open("rb") as stream:
            actual = verify_sha256(stream, digest)
    except LOCAL_ERRORS as exc:
        raise _fail(exc) from None
    print(f"{image}: {PREFIX}{actual} OK")


@image_app.command("extract")
def extract(
    image: ImageArg,
    output: Annotated[Path, typer.Option(
        "--output", "-o", metavar="FILE.sqfs", help="Where to write the SquashFS.")],
    force: Annotated[bool, typer.Option("--force", help="Replace FILE.sqfs.")] = False,
) -> None:
    """Copy IMAGE's SquashFS partition out, for Charliecloud's ch-run.

    Then `ch-run FILE.sqfs -- CMD` mounts it with SquashFUSE and runs CMD inside.
    """
    try:
        if output.exists() and not force:
            raise ImageError(f"{output} exists; --force replaces it.")
        partial = output.with_name(f".{output.name}.part")
        with image.open("rb") as stream:
            primary = read_sif(stream).primary_partition()
            try:
                with partial.open("wb") as out:
                    copy_object(stream, primary, out)
                os.replace(partial, output)
            finally:
                partial.unlink(missing_ok=True)
    except LOCAL_ERRORS as exc:
        raise _fail(exc) from None
    print(f"{output}: {human_bytes(primary.size)} from byte {primary.offset} of {image}; "
          f"run with: ch-run {output} -- CMD")
