"""A TES task's inputs as a job's (pure): each file is placed in the job directory under
`tes/` at its path in the container (`/data/in.txt` at `tes/data/in.txt`), and each
top-level directory of those paths is bound there in the container (`tes/data` at
`/data`), so the executor finds its inputs where the task said, on every runtime.

Where an input comes from: `content` (given inline) or a `file://` URL inside a directory
the admin lets the owner use (gateway.services.data.file_urls), both kept by the route
as uploads of the task's owner, under the same quota; or a URL gridgate reaches as it
reaches every job input: `https://` (fetched), `site://SITE/PATH` (copied site to site)
and `upload:ID` (an upload of the owner's). A DIRECTORY (file:// or site://) is every
regular file below it when the task is created, each an input of its own. Any other
scheme is refused naming it and what is accepted.

Outputs are the job's `deliver` entries (gateway.domain.deliveries), sent once the run
completed: a FILE to its URL; a DIRECTORY's files, or the matches of a path with
wildcards, to the URL followed by their path below the directory (`path_prefix`).
Their top-level directories are bound like the inputs' (made empty at stage-in), and so
are `volumes`, the directories the executors share (empty when the task starts).

Paths must leave the image's own system alone: a task's files may not cover `/usr`,
`/etc` and the like, nor `/mnt` (where ch-run binds the job directory) or `/ch`
(Charliecloud's metadata), and must sit in a directory (`/in.txt` cannot be bound).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.api.tes.task_model import TesFileType, TesInput, TesOutput
from gateway.domain.deliveries import literal_glob, parse_destination
from gateway.domain.errors import Invalid

TES_ROOT = "tes"  # in the job directory
# Top-level directories of an image a task's files must not cover.
_SYSTEM = frozenset({"bin", "boot", "ch", "dev", "etc", "lib", "lib32", "lib64", "libx32",
                     "mnt", "proc", "run", "sbin", "sys", "usr"})
_REACHED = ("https://", "site://", "upload:")
_WILDCARDS = frozenset("*?[")
# The regular files below a file:// or site:// directory URL, relative to it.
Lister = Callable[[str], list[str]]


@dataclass(frozen=True)
class Content:
    """An input the gateway keeps as an upload and places at `dest`: given inline
    (`data`), or a file on the gateway's host (`url`, file://)."""

    dest: str
    data: bytes | None = None
    url: str | None = None


@dataclass(frozen=True)
class TaskFiles:
    """A task's inputs in job-spec terms: `inputs` and `binds` as the job spec takes them,
    and the inline contents still to be stored (then given as `upload:` inputs)."""

    inputs: list[dict[str, Any]]
    contents: list[Content]
    binds: list[dict[str, Any]]
    deliver: list[dict[str, Any]]


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


def task_files(inputs: list[TesInput], outputs: list[TesOutput], listing: Lister,
               also_bound: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> TaskFiles:
    """The job's inputs, binds and deliveries for the task's files; Invalid naming the
    field. `listing` lists a file:// or site:// directory; `also_bound`: other container paths whose
    top-level directory is the job's (an executor's working directory); `volumes`:
    directories the executors share, made empty in the job directory."""
    found = TaskFiles([], [], [], [])
    tops = {path.split("/")[1] for path in also_bound if path != "/"} - _SYSTEM
    made = []
    for index, volume in enumerate(volumes):
        path = working_directory(volume, f"volumes.{index}")
        if path == "/" or path.split("/")[1] in _SYSTEM:
            raise Invalid(f"volume {volume!r} would cover the image's own directories: "
                          "put it elsewhere (e.g. /vol)", field=f"volumes.{index}")
        tops.add(path.split("/")[1])
        if path.count("/") > 1:
            made.append(path)
    for index, item in enumerate(inputs):
        field = f"inputs.{index}"
        path = container_path(item.path, f"{field}.path")
        _add_input(found, item, f"{TES_ROOT}{path}", field, listing)
        tops.add(path.split("/")[1])
    for index, output in enumerate(outputs):
        field = f"outputs.{index}"
        path = container_path(output.path, f"{field}.path")
        found.deliver.append(_delivery(output, path, field))
        tops.add(path.split("/")[1])
    found.binds.extend({"src": f"{TES_ROOT}/{top}", "dst": f"/{top}"} for top in sorted(tops))
    # A deeper volume is its top-level directory's too: bound again at its own path (after
    # it) only so that stage-in makes it, as it makes every bind's source.
    found.binds.extend({"src": f"{TES_ROOT}{path}", "dst": path}
                       for path in sorted(set(made)))
    return found


def _add_input(found: TaskFiles, item: TesInput, dest: str, field: str,
               listing: Lister) -> None:
    if (item.content is None) == (item.url is None):
        raise Invalid("give an input either a url or its content", field=field)
    directory = item.type is TesFileType.DIRECTORY
    if item.content is not None:
        if directory:
            raise Invalid("a DIRECTORY input needs a url, not content", field=field)
        found.contents.append(Content(dest, data=item.content.encode()))
    elif item.url is not None and item.url.startswith("file://"):
        if not directory:
            found.contents.append(Content(dest, url=item.url))
            return
        base = item.url.rstrip("/")
        found.contents.extend(Content(f"{dest}/{rel}", url=f"{base}/{rel}")
                              for rel in listing(item.url))
    elif item.url is not None and item.url.startswith("site://") and directory:
        base = item.url.rstrip("/")
        found.inputs.extend({"source": f"{base}/{rel}", "dest": f"{dest}/{rel}"}
                            for rel in listing(item.url))
    elif item.url is not None and item.url.startswith(_REACHED) and not directory:
        found.inputs.append({"source": item.url, "dest": dest})
    elif directory:
        raise Invalid("a DIRECTORY input is read from a file:// or site:// URL only; give "
                      "the files of other URLs one by one", field=f"{field}.type")
    else:
        scheme = (item.url or "").partition(":")[0]
        raise Invalid(f"gridgate cannot fetch {scheme}: URLs; give https://, "
                      "site://SITE/PATH, upload:ID, file:///PATH (in a directory the admin "
                      "lets you use) or the content itself", field=f"{field}.url")


def _delivery(output: TesOutput, path: str, field: str) -> dict[str, Any]:
    """The `deliver` entry of one TES output at container path `path`."""
    wild = bool(_WILDCARDS & set(path))
    if _WILDCARDS & set(path.split("/")[1]):
        raise Invalid(f"{path!r}: its top-level directory must be named without wildcards",
                      field=f"{field}.path")
    directory = output.type is TesFileType.DIRECTORY
    prefix = output.path_prefix
    if wild and prefix is None:
        raise Invalid(f"{path!r} holds a wildcard: give path_prefix, the directory its "
                      "matches are named below", field=f"{field}.path_prefix")
    try:
        parse_destination(output.url, directory=directory or prefix is not None)
    except ValueError as exc:
        raise Invalid(str(exc), field=f"{field}.url") from None
    if directory:
        if wild:
            raise Invalid("a DIRECTORY output's path takes no wildcard", field=f"{field}.path")
        return {"glob": f"{literal_glob(TES_ROOT + path)}/**", "strip": TES_ROOT + path,
                "url": output.url}
    if prefix is None:
        return {"glob": literal_glob(TES_ROOT + path), "url": output.url}
    strip = prefix.rstrip("/")
    if not path.startswith(strip + "/") or _WILDCARDS & set(strip):
        raise Invalid(f"path_prefix {prefix!r} must be a directory (without wildcards) "
                      f"that {path!r} lies in", field=f"{field}.path_prefix")
    return {"glob": TES_ROOT + path, "strip": TES_ROOT + strip, "url": output.url}
