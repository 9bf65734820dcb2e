"""How one entry of an OCI image layer (a tar member) applies to the root file system,
decided without I/O (the OCI image spec, "Applying Changesets"):

- `.wh.NAME` is a whiteout: NAME (and everything under it) from lower layers goes.
- `.wh..wh..opq` is an opaque marker: its directory keeps only this layer's entries.
- anything else is written at its path, replacing what lower layers had there.

Refused (UnsafeLayerEntry): absolute names, `..`, a hard link to anything but an earlier
path of the image, a relative symlink whose target climbs above the root, device nodes
(an unprivileged unpack cannot make them; images carry none a job needs: skipped).
An absolute symlink target is the container's own path, kept as it is: the unpacker never
follows links out of the root (it resolves parents inside it).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import StrEnum

from containers.errors import UnsafeLayerEntry

WHITEOUT_PREFIX = ".wh."
OPAQUE = ".wh..wh..opq"


class EntryType(StrEnum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    HARDLINK = "hardlink"
    OTHER = "other"  # device, fifo: skipped


class Action(StrEnum):
    WRITE = "write"
    WHITEOUT = "whiteout"  # remove `path`
    OPAQUE = "opaque"  # empty the directory `path` of lower layers' entries
    SKIP = "skip"


@dataclass(frozen=True)
class Step:
    """What to do for one entry: `path` is relative to the root ("" is the root itself)."""

    action: Action
    path: str
    link: str | None = None  # symlink target as written, or hard link source (normalised)


def layer_path(name: str) -> str:
    """The entry's path relative to the root, normalised; UnsafeLayerEntry for absolute
    names and for any `..` component."""
    if name.startswith("/"):
        raise UnsafeLayerEntry(f"layer entry {name!r} has an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeLayerEntry(f"layer entry {name!r} climbs out with '..'")
    if any("\0" in p for p in parts):
        raise UnsafeLayerEntry(f"layer entry {name!r} has a NUL byte")
    return "/".join(parts)


def _symlink_escapes(path: str, target: str) -> bool:
    if target.startswith("/"):
        return False
    depth = path.count("/")  # the link's parent directory depth below the root
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def plan_entry(name: str, kind: EntryType, link: str | None = None) -> Step:
    """The step for the layer entry `name` of `kind` (`link`: its symlink or hard link
    target)."""
    path = layer_path(name)
    base = posixpath.basename(path)
    parent = posixpath.dirname(path)
    if base == OPAQUE:
        return Step(Action.OPAQUE, parent)
    if base.startswith(WHITEOUT_PREFIX):
        gone = base.removeprefix(WHITEOUT_PREFIX)
        if not gone:
            raise UnsafeLayerEntry(f"layer entry {name!r} is a whiteout of nothing")
        return Step(Action.WHITEOUT, posixpath.join(parent, gone))
    if not path:
        if kind is EntryType.DIR:
            return Step(Action.SKIP, "")  # "./": the root's own entry
        raise UnsafeLayerEntry(f"layer entry {name!r} would replace the root")
    if kind is EntryType.OTHER:
        return Step(Action.SKIP, path)
    if kind is EntryType.SYMLINK:
        if not link or "\0" in link:
            raise UnsafeLayerEntry(f"symlink {name!r} has no target")
        if _symlink_escapes(path, link):
            raise UnsafeLayerEntry(f"symlink {name!r} -> {link!r} points above the root")
        return Step(Action.WRITE, path, link)
    if kind is EntryType.HARDLINK:
        if not link:
            raise UnsafeLayerEntry(f"hard link {name!r} has no source")
        source = layer_path(link)
        if not source:
            raise UnsafeLayerEntry(f"hard link {name!r} links to the root")
        return Step(Action.WRITE, path, source)
    return Step(Action.WRITE, path)
