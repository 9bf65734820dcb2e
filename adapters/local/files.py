"""The on-disk layout of one local job, and the atomic file operations it relies on.

WORKDIR/                 the job's directory (0700), the program's cwd
  stdout, stderr         the program's output (0600)
  .gridgate/             control files (0700); a file appears complete or not at all
    request.json         the launch plan, written by submit (tmp + rename)
    script               the user's script, when the request has one (0700)
    spawned              last runner spawn: {pid, at}, written by submit
    claim                the runner that owns the job: {pid, start_time, by};
                         created exclusively, so only one runner ever runs the job
    child                the program: {pid, start_time, started_at}; pgid = sid = pid
    cancel               marker: a cancel was requested
    result.json          the outcome, written once by the claim's holder
    runner.log           the runner's own stdout/stderr
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from adapters.base import OutputStream
from adapters.batch.types import CONTROL_DIR as CONTROL_DIR

T = TypeVar("T")


@dataclass(frozen=True)
class JobFiles:
    """Paths of one job's files (see the module docstring)."""

    workdir: Path

    @property
    def control(self) -> Path:
        return self.workdir / CONTROL_DIR

    @property
    def request(self) -> Path:
        return self.control / "request.json"

    @property
    def script(self) -> Path:
        return self.control / "script"

    @property
    def spawned(self) -> Path:
        return self.control / "spawned"

    @property
    def claim(self) -> Path:
        return self.control / "claim"

    @property
    def child(self) -> Path:
        return self.control / "child"

    @property
    def cancel(self) -> Path:
        return self.control / "cancel"

    @property
    def result(self) -> Path:
        return self.control / "result.json"

    @property
    def runner_log(self) -> Path:
        return self.control / "runner.log"

    def output(self, stream: OutputStream) -> Path:
        return self.workdir / stream


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace `path` with `data` so that readers see the old file or the new, never a part."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def create_exclusive(path: Path, data: bytes) -> bool:
    """Create `path` holding `data` unless it exists; True when this call created it.

    Like O_CREAT|O_EXCL, but the file never exists without its content: it is
    written under a private name and hard-linked into place (link fails on EEXIST).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def encode_json(data: object) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True).encode() + b"\n"


def write_json_atomic(path: Path, data: object) -> None:
    write_atomic(path, encode_json(data))


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None if the file does not exist.

    Raises ValueError if the file is not a JSON object (files are only ever
    replaced whole, so this means someone else wrote it).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a JSON object")
    return data


def load_record(path: Path, parse: Callable[[Mapping[str, Any]], T]) -> T | None:
    """The record `parse` makes of the JSON object in `path`; None if there is no file."""
    data = read_json(path)
    return None if data is None else parse(data)


def make_private_dirs(root: Path, path: Path) -> None:
    """Create `path` and any missing parents below `root`, each mode 0700."""
    missing = []
    current = path
    while not current.exists() and current != root:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        # mkdir's mode is filtered by the umask; say exactly what we mean.
        os.chmod(directory, 0o700)
    os.chmod(path, 0o700)
