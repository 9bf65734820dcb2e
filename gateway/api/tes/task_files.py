"""A TES task's inputs as a job's (pure): each file is placed in the job directory under
`tes/` at its path in the container (`/data/in.txt` at `tes/data/in.txt`), and each
top-level directory of those paths is bound there in the container (`tes/data` at
`/data`), so the executor finds its inputs where the task said, on every runtime.

Where an input comes from: `content` (given inline: the route keeps it as an upload of
the task's owner, under the same quota), or a URL gridgate reaches as it reaches every
job input: `https://` (fetched), `site://SITE/PATH` (copied site to site) and `upload:ID`
(an upload of the owner's). Any other scheme is refused naming it and what is accepted;
`file://` too, until an admin can declare the directories a user may read that way.

Paths must leave the image's own system alone: a task's files may not cover `/usr`,
`/etc` and the like, nor `/mnt` (where ch-run binds the job directory) or `/ch`
(Charliecloud's metadata), and must sit in a directory (`/in.txt` cannot be bound).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from gateway.api.tes.task_model import TesFileType, TesInput
from gateway.domain.errors import Invalid

TES_ROOT = "tes"  # in the job directory
# Top-level directories of an image a task's files must not cover.
_SYSTEM = frozenset({"bin", "boot", "ch", "dev", "etc", "lib", "lib32", "lib64", "libx32",
                     "mnt", "proc", "run", "sbin", "sys", "usr"})
_REACHED = ("https://", "site://", "upload:")


@dataclass(frozen=True)
class Content:
    """An input given inline, to be kept as an upload and placed at `dest`."""

    dest: str
    data: bytes


@dataclass(frozen=True)
class TaskFiles:
    """A task's inputs in job-spec terms: `inputs` and `binds` as the job spec takes them,
    and the inline contents still to be stored (then given as `upload:` inputs)."""

    inputs: list[dict[str, Any]]
    contents: list[Content]
    binds: list[dict[str, Any]]


def container_path(path: str, field: str) -> str:
    """A task's path in the container, checked: absolute, normal, in a directory of its
    own that is not one of the image's system directories."""
    parts = working_directory(path, field).split("/")
    if len(parts) < 3:
        raise Invalid(f"{path!r} must be an absolute, normalised path inside a directory "
                      "(e.g. /data/in.txt)", field=field)
    if parts[1] in _SYSTEM:
        raise Invalid(f"{path!r} would cover the image's /{parts[1]}: put the task's files "
                      "elsewhere (e.g. /data)", field=field)
    return path


def working_directory(path: str, field: str) -> str:
    """A path in the container, checked: absolute and normal (an executor's working
    directory may be anywhere in the image)."""
    if not path.startswith("/") or posixpath.normpath(path) != path or "\x00" in path:
        raise Invalid(f"{path!r} must be an absolute, normalised path inside a directory "
                      "(e.g. /data/in.txt)", field=field)
    return path


def task_files(inputs: list[TesInput]) -> TaskFiles:
    """The job's inputs and binds for the task's `inputs`; Invalid naming the field."""
    found = TaskFiles([], [], [])
    tops: set[str] = set()
    for index, item in enumerate(inputs):
        field = f"inputs.{index}"
        path = container_path(item.path, f"{field}.path")
        if item.type is TesFileType.DIRECTORY:
            raise Invalid("DIRECTORY inputs are not supported yet: give each file",
                          field=f"{field}.type")
        dest = f"{TES_ROOT}{path}"
        if (item.content is None) == (item.url is None):
            raise Invalid("give an input either a url or its content", field=field)
        if item.content is not None:
            found.contents.append(Content(dest, item.content.encode()))
        elif item.url is not None and item.url.startswith(_REACHED):
            found.inputs.append({"source": item.url, "dest": dest})
        else:
            scheme = (item.url or "").partition(":")[0]
            raise Invalid(f"gridgate cannot fetch {scheme}: URLs; give https://, "
                          "site://SITE/PATH, upload:ID or the content itself",
                          field=f"{field}.url")
        tops.add(path.split("/")[1])
    found.binds.extend({"src": f"{TES_ROOT}/{top}", "dst": f"/{top}"} for top in sorted(tops))
    return found
