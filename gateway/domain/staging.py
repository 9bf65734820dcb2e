"""Staging in the job spec: where inputs come from, where they land, which outputs return.

Pure rules, no I/O. Every path a user gives is relative to the job directory and is
checked here once: no absolute paths, no leading `~`, no `..`, no NUL or control
characters, no empty or `.` segments, nothing in the gateway's own control directory.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import SplitResult, urlsplit

from adapters.batch.types import CONTROL_DIR as CONTROL_DIR  # the job dir's control files
from rules.job_paths import PathFault, relative_path_fault
from rules.text import SITE_NAME

MAX_PATH_CHARS = 4096
MAX_SEGMENT_CHARS = 255
# What check_job_path says of each fault; {what} is "a path" or "a glob".
_PROBLEMS = {
    PathFault.EMPTY: "must be {what} relative to the job directory, not empty",
    PathFault.CONTROL: "must not contain control characters",
    PathFault.TOO_LONG: f"must be at most {MAX_PATH_CHARS} characters",
    PathFault.ABSOLUTE: "must be {what} relative to the job directory, not absolute",
    # A shell, scp and sftp read a leading ~ as a home directory (~/.ssh/...).
    PathFault.HOME: "must be {what} relative to the job directory, not start with '~' "
                    "(a home directory)",
    PathFault.PARENT: "must not contain '..' segments",
    PathFault.EMPTY_NAME: "must not contain empty or '.' segments (no '//', './' or "
                          "trailing '/')",
    PathFault.NAME_TOO_LONG: f"each name must be at most {MAX_SEGMENT_CHARS} characters",
}


class OutputsMode(StrEnum):
    """What happens to matched outputs after the run."""

    FETCH = "fetch"  # copied into the gateway store, verified, served by the API
    KEEP = "keep"  # left in the job directory on the site; listed with size and sha256


# Where a collected output's bytes are (JobOutput.location).
IN_STORE, ON_SITE = "gateway", "site"


def check_job_path(value: str, *, glob: bool = False, submitted: bool = False) -> str:
    """`value` if it is a safe path relative to the job directory, else ValueError.
    `submitted`: the path of a job accepted earlier, when a leading `~` was not refused
    yet (it never leaves the job directory: the site joins it below the directory)."""
    what = "a glob" if glob else "a path"
    fault = relative_path_fault(value, max_chars=MAX_PATH_CHARS, max_name=MAX_SEGMENT_CHARS,
                                home_ok=submitted)
    if fault is PathFault.CONTROL and "\x00" in value:
        raise ValueError("must not contain NUL bytes")
    if fault is not None:
        raise ValueError(_PROBLEMS[fault].format(what=what))
    if value.split("/")[0] == CONTROL_DIR:
        raise ValueError(f"must not point into the gateway's control directory {CONTROL_DIR}/")
    return value


class SourceKind(StrEnum):
    UPLOAD = "upload"
    SITE = "site"
    HTTPS = "https"


@dataclass(frozen=True)
class InputSource:
    """A parsed `source`: an upload id, a file at a federated site, or an https URL."""

    kind: SourceKind
    upload_id: str | None = None
    site: str | None = None
    path: str | None = None
    url: str | None = None


def parse_source(value: str) -> InputSource:
    """The source behind `upload:<id>`, `site://NAME/ABSOLUTE/PATH` or `https://...`;
    ValueError (saying what is accepted) for anything else."""
    if "\x00" in value or any(ord(c) < 32 for c in value):
        raise ValueError("must not contain NUL bytes or control characters")
    if value.startswith("upload:"):
        upload_id = value.removeprefix("upload:")
        try:
            canonical = str(uuid.UUID(upload_id))
        except ValueError:
            raise ValueError("upload:<id> needs the id 'gridgate upload' printed") from None
        if canonical != upload_id.lower():
            raise ValueError("upload:<id> needs the id 'gridgate upload' printed")
        return InputSource(SourceKind.UPLOAD, upload_id=canonical)
    if value.startswith("site://"):
        name, slash, path = value.removeprefix("site://").partition("/")
        if not SITE_NAME.matches(name):
            raise ValueError(f"site://NAME/PATH needs a site name: {SITE_NAME.hint}")
        path = "/" + path
        if not slash or path == "/":
            raise ValueError("site://NAME/PATH needs the absolute path of a file at the site")
        if path.endswith("/") or any(s in ("..", ".", "") for s in path[1:].split("/")):
            raise ValueError("site://NAME/PATH must be a plain absolute file path (no '..', "
                             "'.', '//' or trailing '/')")
        return InputSource(SourceKind.SITE, site=name, path=path)
    parts = urlsplit(value)
    if parts.scheme.lower() == "https":
        check_https(parts)
        return InputSource(SourceKind.HTTPS, url=value)
    raise ValueError("source must be upload:<id>, site://NAME/ABSOLUTE/PATH or an https:// "
                     "URL")


def check_https(parts: SplitResult) -> None:
    """ValueError unless the https URL `parts` names a host and carries no credentials."""
    if not parts.hostname:
        raise ValueError("https URL needs a host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("https URL must not carry credentials")


def duplicate_dest(dests: Sequence[str]) -> tuple[int, int] | None:
    """(i, j), i < j, when inputs[j].dest repeats inputs[i].dest, or one lies inside the
    other (a file cannot also be a directory); None when all are distinct."""
    seen: dict[str, int] = {}
    for j, dest in enumerate(dests):
        if dest in seen:
            return seen[dest], j
        seen[dest] = j
    for j, dest in enumerate(dests):
        parent = posixpath.dirname(dest)
        while parent:
            if parent in seen:
                i = seen[parent]
                return min(i, j), max(i, j)
            parent = posixpath.dirname(parent)
    return None
