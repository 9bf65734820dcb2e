"""Durable, private file operations shared by the store's modules."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path, root: Path) -> Path:
    """`path` (inside `root`) and every directory between them, as directories only
    the gateway can enter."""
    parts = path.relative_to(root).parts
    for current in [root, *(root.joinpath(*parts[:i + 1]) for i in range(len(parts)))]:
        current.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        # mkdir's mode is filtered by the umask and ignored for existing directories.
        if current.stat().st_mode & 0o777 != DIR_MODE:
            current.chmod(DIR_MODE)
    return path


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink in `path` survive a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def held(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive flock on `lock_file` (made if missing): one holder at a time,
    across threads and processes, released when the holder ends however it ends."""
    lock_file.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
