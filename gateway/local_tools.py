"""Running a local tool (mksquashfs, siftool, unsquashfs, cp) and turning its failure into
one clear message: shared by `gridgate image` (gateway.cli.image_build, .image_inspect) and
the gateway's own image packing (gateway.services.sif_pack).

Neither server code nor CLI: it imports nothing of the gateway, so the CLI may import it
(the `cli` import contract checks indirect imports too) and the services may as well. Not
in containers/, which is pure (no I/O): the argv and the missing-tool message are built
there (containers.image_tools), the process is run here.
"""

from __future__ import annotations

import shutil
import subprocess

from containers.image_tools import missing_tool


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
