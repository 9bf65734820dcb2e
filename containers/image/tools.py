"""Argv for the tools that build and read SIF images (squashfs-tools, siftool), what their
output means, and which Debian package brings each one.

siftool's command line numbers the object kinds its own way (`siftool add --help`), not as
the file stores them (containers.image.sif): `--datatype 4` is a partition, `--parttype 2` the
primary system partition, `--partfs 1` SquashFS; `--partarch` takes the header's arch
number (2 = amd64).
"""

from __future__ import annotations

from collections.abc import Sequence

from containers.errors import SifFormatError
from containers.image.sif import ARCH_CODES

# Debian package of each tool (what a missing one's message tells to install).
DEBIAN_PACKAGES = {
    "mksquashfs": "squashfs-tools", "unsquashfs": "squashfs-tools", "siftool": "siftool",
    "ch-run": "charliecloud-runtime", "squashfuse": "squashfuse",
}
SIFTOOL_DATATYPES = {"deffile": 1, "envvar": 2, "labels": 3, "partition": 4,
                     "generic-json": 6}
# Objects go in group 1, as sylabs/sif places them by default (DefaultObjectGroup) and
# Apptainer's builds have them; Debian's siftool 2.8 would leave them in none.
OBJECT_GROUP = 1
SIFTOOL_PRIMARY_SYSTEM = 2
SIFTOOL_SQUASHFS = 1
LIST_ROOT = "squashfs-root"  # the prefix `unsquashfs -l -d` puts before every path


def missing_tool(tool: str) -> str:
    """What to say when `tool` is not on PATH."""
    package = DEBIAN_PACKAGES.get(tool)
    hint = f": install it with `apt-get install {package}` (Debian)" if package else ""
    return f"{tool} is not installed{hint}."


def mksquashfs_argv(root: str, out: str, *, all_root: bool) -> list[str]:
    """Pack directory `root` into SquashFS file `out`. gzip: Apptainer's default and
    readable by every kernel and squashfuse. `all_root`: files owned by root in the image
    (an unprivileged builder's own uid means nothing there)."""
    argv = ["mksquashfs", root, out, "-noappend", "-comp", "gzip", "-no-progress", "-quiet"]
    return [*argv, "-all-root"] if all_root else argv


def siftool_new_argv(sif: str) -> list[str]:
    """An empty SIF at `sif`."""
    return ["siftool", "new", sif]


def siftool_add_argv(sif: str, path: str, datatype: str, name: str | None = None) -> list[str]:
    """Add file `path` to `sif` as a `datatype` object (a key of SIFTOOL_DATATYPES)."""
    argv = ["siftool", "add", sif, path, "--datatype", str(SIFTOOL_DATATYPES[datatype]),
            "--groupid", str(OBJECT_GROUP)]
    return [*argv, "--filename", name] if name else argv


def siftool_add_partition_argv(sif: str, squashfs: str, arch: str) -> list[str]:
    """Add SquashFS file `squashfs` to `sif` as its primary system partition for `arch`
    (a Go name, e.g. amd64): what Apptainer runs."""
    code = ARCH_CODES.get(arch)
    if code is None:
        raise SifFormatError(f"Unknown architecture {arch!r}; one of "
                             f"{', '.join(sorted(ARCH_CODES))}.")
    return ["siftool", "add", sif, squashfs, "--groupid", str(OBJECT_GROUP),
            "--datatype", str(SIFTOOL_DATATYPES["partition"]),
            "--parttype", str(SIFTOOL_PRIMARY_SYSTEM), "--partfs", str(SIFTOOL_SQUASHFS),
            "--partarch", str(int(code))]


def unsquashfs_list_argv(image: str, offset: int) -> list[str]:
    """List the SquashFS file system at byte `offset` of `image` (a SIF's partition)."""
    return ["unsquashfs", "-l", "-o", str(offset), "-d", LIST_ROOT, image]


def unsquashfs_extract_argv(image: str, offset: int, dest: str) -> list[str]:
    """Unpack the SquashFS file system at byte `offset` of `image` into new directory
    `dest`."""
    return ["unsquashfs", "-no-progress", "-o", str(offset), "-d", dest, image]


def parse_unsquashfs_list(output: str) -> list[str]:
    """The absolute paths in `unsquashfs -l` output (the root itself left out)."""
    paths = []
    for line in output.splitlines():
        if line.startswith(LIST_ROOT + "/"):
            paths.append(line[len(LIST_ROOT):])
    return paths


# Unpacks SquashFS file "$1" into directory "$2" once: an existing "$2" is used as it is;
# else into "$2.gw-partial" (a left-over of a killed unpack is removed first; an image's
# read-only directories are made writable so that it can be), then renamed into place, so
# "$2" never names a half-unpacked tree. Either way the tree gets an empty /ch/environment
# when it has none, since the launch line's bare `ch-run --set-env` (the image's own
# environment) fails without one; appended to, never truncated, and never through a
# symlink of the image's. The names after "$2" are top-level directories the tree must
# have (bind destinations): each made where nothing (not even a dangling symlink) is by
# that name, one level only, so nothing is ever made outside the tree. Paths are data,
# never part of the script.
UNPACK_SCRIPT = ('src=$1 dest=$2 part=$2.gw-partial; shift 2; '
                 'env_file() { test -e "$1/ch/environment" || test -L "$1/ch" '
                 '|| test -L "$1/ch/environment" '
                 '|| { mkdir -p -- "$1/ch" && : >> "$1/ch/environment"; }; }; '
                 # Each name of each path, made where the image has nothing by it; a
                 # symlink or a file ends that path (nothing is made through a link).
                 'points() { tree=$1; shift; for path in "$@"; do at=$tree rest=$path/; '
                 'while test -n "$rest"; do parent=$at name=${rest%%/*} rest=${rest#*/}; '
                 'at=$parent/$name; test -L "$at" && break; '
                 'test -e "$at" || mkdir -- "$at" 2>/dev/null '
                 '|| { chmod u+w -- "$parent" && mkdir -- "$at"; } || return 1; '
                 'test -d "$at" || break; done; done; }; '
                 'if test -d "$dest"; then env_file "$dest" && points "$dest" "$@"; exit; fi; '
                 'if test -e "$part"; then chmod -R u+w -- "$part" && rm -rf -- "$part" '
                 '|| exit 1; fi; '
                 'unsquashfs -no-progress -quiet -d "$part" "$src" >/dev/null '
                 '&& env_file "$part" && points "$part" "$@" && mv -T -- "$part" "$dest"')


def unpack_once_argv(squashfs: str, dest: str, mount_points: Sequence[str] = ()) -> list[str]:
    """Unpack SquashFS file `squashfs` into directory `dest` unless it is there (see
    UNPACK_SCRIPT): what ch-run runs for an unprivileged user, to whom /dev/fuse is closed.
    `mount_points` are directories the tree must have (ch-run 0.31 cannot make a bind's
    destination), relative to its root (`data`, `srv/shared/ada`): each name made where the
    image has nothing by it, never through a symlink."""
    for path in (squashfs, dest):
        if not path.startswith("/"):
            raise ValueError(f"{path!r} is not an absolute path")
    for point in mount_points:
        if "\x00" in point or any(name in ("", ".", "..") for name in point.split("/")):
            raise ValueError(f"{point!r} is not a relative path of directory names")
    return ["sh", "-c", UNPACK_SCRIPT, "gridgate-unpack", squashfs, dest, *mount_points]
