"""Running a local tool (mksquashfs, siftool, unsquashfs, cp) and turning its failure into
one clear message, and packing a root file system into a SIF with them: shared by
`gridgate image` (gateway.cli.images.sif_build, .image_inspect) and the gateway's own image
packing (gateway.services.images.sif_pack).

Neither server code nor CLI: it imports nothing of the gateway, so the CLI may import it
(the `cli` import contract checks indirect imports too) and the services may as well. Not
in containers/, which is pure (no I/O): the argv and the missing-tool message are built
there (containers.image.tools), the process is run here.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from containers.image import definition as image_def
from containers.image import tools as image_tools
from containers.image.tools import missing_tool


def run_tool(argv: list[str], what: str, error: type[Exception]) -> str:
    """Run `argv` (no shell); its stdout. A tool not on PATH, or one that exits non-zero,
    raises `error` with what to install, or `what` failed and the last lines it wrote."""
    if shutil.which(argv[0]) is None:
        raise error(missing_tool(argv[0]))
    done = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise error(f"{what} failed ({argv[0]} exited {done.returncode}): {tail}")
    return done.stdout


def pack_sif(root: Path, work: Path, arch: str, environment: Mapping[str, str],
             error: type[Exception], *, all_root: bool,
             definition: tuple[str, str] | None = None) -> Path:
    """`work/image.sif` as Apptainer's builds lay it out: `root` packed by mksquashfs (its
    files root's inside with `all_root`), then siftool: a new SIF, the definition (its file
    name, its text), the environment (Env.Vars JSON), the primary system partition."""
    squashfs, sif = work / "root.squashfs", work / "image.sif"
    run_tool(image_tools.mksquashfs_argv(str(root), str(squashfs), all_root=all_root),
             "Packing the root file system (mksquashfs)", error)
    run_tool(image_tools.siftool_new_argv(str(sif)), "Creating the SIF (siftool new)", error)
    if definition is not None:
        name, text = definition
        (work / "definition.yaml").write_text(text)
        run_tool(image_tools.siftool_add_argv(str(sif), str(work / "definition.yaml"),
                                              "deffile", name), "Adding the definition", error)
    if environment:
        (work / "environment.json").write_bytes(image_def.environment_json(dict(environment)))
        run_tool(image_tools.siftool_add_argv(str(sif), str(work / "environment.json"),
                                              "envvar", "environment.json"),
                 "Adding the environment", error)
    run_tool(image_tools.siftool_add_partition_argv(str(sif), str(squashfs), arch),
             "Adding the partition (siftool add)", error)
    squashfs.unlink()
    return sif
