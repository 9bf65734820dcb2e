"""Apply OCI image layers (tar, plain or gzip) to a root file system on the gateway, safely.

containers.image.oci_layers decides what each entry means (whiteouts, opaque directories, the
refusals); this module does it. Parent directories are resolved inside the root, following
the image's own symlinks as the image sees them (an absolute link means the image's root,
never this host's), so no entry writes outside the root; the last name is never followed:
what lower layers had there is replaced. Device nodes and fifos are skipped; set-id bits
are dropped (the image is run unprivileged); the owner keeps read and write on what is
unpacked, so the tree can be packed and removed without privileges.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
from pathlib import Path

from containers.errors import UnsafeLayerEntry
from containers.image.oci_layers import Action, EntryType, plan_entry

MAX_SYMLINKS = 40  # as the kernel's ELOOP limit
COPY_BLOCK = 1 << 20
# Entries one layer may have: far above a distribution's (Debian's base: ~10,000), low
# enough that a layer of empty files cannot exhaust the gateway's inodes.
MAX_ENTRIES = 500_000


class LayerError(Exception):
    """A layer that cannot be applied; the message names the entry."""


def _kind(member: tarfile.TarInfo) -> EntryType:
    if member.isreg():
        return EntryType.FILE
    if member.isdir():
        return EntryType.DIR
    if member.issym():
        return EntryType.SYMLINK
    if member.islnk():
        return EntryType.HARDLINK
    return EntryType.OTHER


def resolve_inside(root: Path, rel: str, *, make: bool) -> Path:
    """Where the image path `rel` (relative) is under `root`, its directories' symlinks
    followed inside the root, its last name not followed; with `make`, missing
    directories are made."""
    pending = [p for p in rel.split("/") if p]
    current: list[str] = []
    hops = 0
    while len(pending) > 1:
        name = pending.pop(0)
        candidate = root.joinpath(*current, name)
        if candidate.is_symlink():
            hops += 1
            if hops > MAX_SYMLINKS:
                raise LayerError(f"{rel}: too many symbolic links in the image")
            target = os.readlink(candidate)
            joined = target if target.startswith("/") else "/".join(["", *current, target])
            resolved = posixpath.normpath("/" + joined.lstrip("/"))
            pending = [*[p for p in resolved.split("/") if p], *pending]
            current = []
            continue
        if not os.path.lexists(candidate):
            if not make:
                return root.joinpath(*current, name, *pending)
            candidate.mkdir(mode=0o755)
        elif not candidate.is_dir():
            raise LayerError(f"{'/'.join([*current, name])} is not a directory in the image "
                             f"(needed for {rel})")
        current.append(name)
    return root.joinpath(*current, *pending)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for dirpath, _, _ in os.walk(path):
            os.chmod(dirpath, 0o700)
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def apply_layer(root: Path, layer: Path, budget: int, max_entries: int = MAX_ENTRIES) -> int:
    """Apply the tar layer file `layer` (gzip or not) to `root`; the bytes it wrote, at
    most `budget`, in at most `max_entries` entries (LayerError past either)."""
    written = 0
    ours: set[str] = set()  # paths this layer made: an opaque marker keeps them
    try:
        with tarfile.open(layer, "r:*") as tar:
            for count, member in enumerate(tar, 1):
                if count > max_entries:
                    raise LayerError(f"the layer has more than {max_entries} entries")
                try:
                    step = plan_entry(member.name, _kind(member), member.linkname or None)
                except UnsafeLayerEntry as exc:
                    raise LayerError(exc.message) from None
                if step.action is Action.SKIP:
                    continue
                if step.action is Action.WHITEOUT:
                    _remove(resolve_inside(root, step.path, make=False))
                    continue
                if step.action is Action.OPAQUE:
                    folder = resolve_inside(root, step.path + "/x", make=False).parent
                    if folder.is_dir() and not folder.is_symlink():
                        for child in folder.iterdir():
                            rel = posixpath.join(step.path, child.name)
                            if rel not in ours:
                                _remove(child)
                    continue
                ours.add(step.path)
                written += _write(tar, member, root, step.path, step.link, budget - written)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise LayerError(f"the layer cannot be unpacked: {exc}") from None
    return written


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, root: Path, rel: str,
           link: str | None, budget: int) -> int:
    target = resolve_inside(root, rel, make=True)
    mode = member.mode & 0o1777  # no set-id bits
    if member.isdir():
        if not (target.is_dir() and not target.is_symlink()):
            _remove(target)
            target.mkdir()
        os.chmod(target, mode | 0o700)
        return 0
    _remove(target)
    if member.issym():
        assert link is not None
        os.symlink(link, target)
        return 0
    if member.islnk():
        assert link is not None
        source = resolve_inside(root, link, make=False)
        if not stat.S_ISREG(os.lstat(source).st_mode):
            raise LayerError(f"hard link {rel} -> {link}: not a regular file of the image")
        os.link(source, target)
        return 0
    if member.size > budget:
        raise LayerError(f"{rel} is {member.size} bytes: unpacking it goes over "
                         "registry_image_max_bytes")
    stream = tar.extractfile(member)
    assert stream is not None
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(stream, out, COPY_BLOCK)
    os.chmod(target, mode | 0o600)
    return member.size
