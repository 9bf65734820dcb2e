"""What a job left in its directory: files and symlinks with sizes, and their sha256,
taken on the site with argv commands (GNU find and sha256sum), NUL-separated so any
file name survives."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.transfer.site_fs import HASH_TIMEOUT, SiteCommandFailed, is_sha256
from adapters.transport import Transport

LIST_TIMEOUT = 300.0
# sha256sum gets at most this many paths per command (argv stays far below ARG_MAX).
HASH_BATCH = 200


@dataclass(frozen=True)
class ListedEntry:
    """A regular file or a symlink below a directory (`path` relative to it)."""

    path: str
    is_symlink: bool
    size: int


def list_tree(transport: Transport, directory: str) -> list[ListedEntry]:
    """Every regular file and symlink below `directory` (symlinks are not followed)."""
    argv = ["find", directory, "-mindepth", "1", "(", "-type", "f", "-o", "-type", "l", ")",
            "-printf", "%y %s %P\\0"]
    result = transport.run(argv, timeout=LIST_TIMEOUT)
    if result.exit_status != 0:
        err = result.stderr.decode("utf-8", "replace").strip()[-300:]
        raise SiteCommandFailed(f"cannot list {directory} on the site: {err}")
    return parse_find_output(result.stdout)


def parse_find_output(raw: bytes) -> list[ListedEntry]:
    """Entries from `find -printf '%y %s %P\\0'` output."""
    entries = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        kind, size, path = record.split(b" ", 2)
        if kind not in (b"f", b"l") or not path:
            raise SiteCommandFailed(f"unexpected find output {record[:100]!r}")
        entries.append(ListedEntry(path.decode("utf-8", "surrogateescape"), kind == b"l",
                                   int(size)))
    return entries


def sha256_many(transport: Transport, paths: Sequence[str]) -> list[str]:
    """sha256 of each path, computed on the site, in the order given."""
    digests: list[str] = []
    for start in range(0, len(paths), HASH_BATCH):
        batch = list(paths[start:start + HASH_BATCH])
        result = transport.run(["sha256sum", "-z", "--", *batch], timeout=HASH_TIMEOUT)
        if result.exit_status != 0:
            err = result.stderr.decode("utf-8", "replace").strip()[-300:]
            raise SiteCommandFailed(f"sha256sum failed on the site: {err}")
        records = [r for r in result.stdout.split(b"\0") if r]
        found = [r[:64].decode("ascii", "replace") for r in records]
        if len(found) != len(batch) or not all(is_sha256(d) for d in found):
            raise SiteCommandFailed("sha256sum on the site printed something unexpected")
        digests.extend(found)
    return digests
