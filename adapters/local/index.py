"""Where local jobs live: job directories below the jobs root, found by native id.

Native ids are `local-` + 24 hex digits of a hash of the job directory's path
below the jobs root: stable, recomputable from the workdir, and short. A symlink
JOBS_ROOT/.index/<native id> -> the job directory lets `status` and `cancel`
find a job from its id alone.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

from adapters.errors import AdapterError
from adapters.local.files import JobFiles, make_private_dirs

INDEX_DIR = ".index"
NATIVE_ID = re.compile(r"local-[0-9a-f]{24}")


class JobIndex:
    """Job directories below `root`, and the index from native ids to them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def workdir(self, workdir: str, error: type[AdapterError]) -> Path:
        """`workdir` resolved; raises `error` unless it is a job directory below the root."""
        path = Path(workdir)
        if not path.is_absolute():
            raise error(f"job directory {workdir!r} is not an absolute path")
        resolved = path.resolve()
        if not _inside(self.root, resolved) or resolved.relative_to(self.root).parts[0] in (
            INDEX_DIR,
        ):
            raise error(
                f"job directory {workdir!r} is outside the local site's jobs root {self.root}"
            )
        return resolved

    def native_id(self, workdir: Path) -> str:
        """The id of the job in `workdir` (a resolved job directory)."""
        digest = hashlib.sha256(str(workdir.relative_to(self.root)).encode()).hexdigest()
        return f"local-{digest[:24]}"

    def link(self, native_id: str, workdir: Path) -> None:
        """Point the index entry of `native_id` at `workdir` (atomically)."""
        index = self.root / INDEX_DIR
        make_private_dirs(self.root, index)
        tmp = index / f".{native_id}.{os.getpid()}.{threading.get_ident()}.tmp"
        if tmp.is_symlink():
            tmp.unlink()
        os.symlink(os.path.relpath(workdir, index), tmp)
        os.replace(tmp, index / native_id)

    def native_ids(self) -> list[str]:
        """Every job id the index holds, finished or not, in no particular order."""
        try:
            names = os.listdir(self.root / INDEX_DIR)
        except FileNotFoundError:
            return []
        return [name for name in names if NATIVE_ID.fullmatch(name)]

    def files_of(self, native_id: str) -> JobFiles | None:
        """The job directory behind a native id, or None if there is none."""
        if not NATIVE_ID.fullmatch(native_id):
            return None
        try:
            target = os.readlink(self.root / INDEX_DIR / native_id)
        except OSError:
            return None
        workdir = (self.root / INDEX_DIR / target).resolve()
        if not _inside(self.root, workdir):
            return None
        return JobFiles(workdir)


def _inside(root: Path, path: Path) -> bool:
    return path != root and root in path.parents
