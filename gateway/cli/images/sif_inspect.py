"""What `gridgate image inspect` finds in a SIF: header, objects, environment, definition,
digest, and the MPI family and ABI from the libraries in its primary partition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from containers.errors import SifFormatError
from containers.image import definition as image_def
from containers.image import tools as image_tools
from containers.image.digest import PREFIX, sha256_of
from containers.image.mpi_abi import detect_mpi
from containers.image.sif import (
    FS_NAMES,
    PART_NAMES,
    DataType,
    Descriptor,
    FsType,
    has_squashfs_magic,
    read_object,
    read_sif,
)
from gateway.cli.images.sif_build import ImageError, run_tool


def _object(descriptor: Descriptor) -> dict[str, Any]:
    partition = descriptor.partition
    return {
        "id": descriptor.id, "type": descriptor.type_name, "name": descriptor.name,
        "group": descriptor.group_id or None,
        "link": descriptor.linked_id or None, "offset": descriptor.offset,
        "size": descriptor.size,
        "partition": None if partition is None else {
            "fs": FS_NAMES.get(partition.fs_type, "Unknown"),
            "type": PART_NAMES.get(partition.part_type, "Unknown"), "arch": partition.arch,
            "primary": descriptor.is_primary_system},
        "signature_hash": descriptor.signature_hash,
    }


def list_files(path: Path, offset: int) -> list[str]:
    """The paths in the SquashFS partition at `offset` of SIF `path`."""
    output = run_tool(image_tools.unsquashfs_list_argv(str(path), offset),
                      f"Listing {path} (unsquashfs -l)")
    return image_tools.parse_unsquashfs_list(output)


def _mpi(path: Path, primary: Descriptor | None) -> dict[str, Any]:
    if primary is None or primary.partition is None \
            or primary.partition.fs_type != FsType.SQUASHFS:
        return {"family": None, "error": "no SquashFS primary partition to look into"}
    try:
        files = list_files(path, primary.offset)
    except ImageError as exc:
        return {"family": None, "error": str(exc)}
    found = detect_mpi(files)
    return {"family": found.family, "abi": found.abi, "implementation": found.implementation,
            "version": found.version, "release": found.release, "summary": found.summary,
            "libraries": [lib.path for lib in found.libraries]}


def inspect_image(path: Path, *, mpi: bool = True) -> dict[str, Any]:
    """Everything `image inspect` prints, as JSON-able data."""
    try:
        with path.open("rb") as stream:
            image = read_sif(stream)
            digest = sha256_of(stream)
            environment: dict[str, str] = {}
            for descriptor in image.objects(DataType.ENV_VARS):
                environment.update(
                    image_def.parse_environment_json(read_object(stream, descriptor)))
            definitions = image.objects(DataType.DEFFILE)
            definition = (read_object(stream, definitions[0]).decode("utf-8", "replace")
                          if definitions else None)
            try:
                primary: Descriptor | None = image.primary_partition()
            except SifFormatError:
                primary = None
            magic = primary is not None and has_squashfs_magic(stream, primary)
    except OSError as exc:
        raise ImageError(f"{path}: {exc.strerror or exc}.") from None
    header = image.header
    return {
        "path": str(path), "digest": PREFIX + digest, "size": image.file_size,
        "sif": {"version": header.version, "arch": header.arch, "id": str(header.id),
                "created_at": header.created_at.isoformat(),
                "modified_at": header.modified_at.isoformat(),
                "launch_script": header.launch_script,
                "descriptors_total": header.descriptors_total,
                "descriptors_free": header.descriptors_free},
        "objects": [_object(d) for d in image.descriptors],
        "primary_partition": None if primary is None else {
            "id": primary.id, "offset": primary.offset, "size": primary.size,
            "squashfs_magic": magic},
        "environment": environment,
        "definition": definition,
        "mpi": _mpi(path, primary) if mpi else None,
    }
