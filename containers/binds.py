"""Bind mounts: what a job may show its container, checked before any launch line exists.

A user's bind names its source relative to the job directory, or as an absolute path under
one of the prefixes the site allows (a shared data area); its destination is an absolute
path inside the container. Refused everywhere: `..`, `.` and empty segments, NUL and other
control characters (a newline would end a batch-script line), and the two characters the
runtimes split bind specifications on: ':' (`SRC:DST[:OPTS]` for apptainer and ch-run) and
',' (apptainer's `--bind` takes a comma-separated list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.batch.types import CONTROL_DIR
from containers.errors import InvalidBind
from rules.job_paths import PathFault, has_control, name_fault

MAX_PATH_CHARS = 4096
# Characters that change how a runtime reads a bind specification.
SEPARATORS = (":", ",")


@dataclass(frozen=True)
class Bind:
    """A bind as the job spec gives it: `src` relative to the job directory (or absolute
    under a prefix the site allows), `dst` absolute inside the container."""

    src: str
    dst: str
    read_only: bool = False


@dataclass(frozen=True)
class Mount:
    """A checked bind: absolute host path, absolute container path."""

    host: str
    guest: str
    read_only: bool = False

    @property
    def spec(self) -> str:
        """`HOST:GUEST[:ro]`, apptainer's and singularity's `--bind` form."""
        return f"{self.host}:{self.guest}" + (":ro" if self.read_only else "")


def _problem(value: str) -> str | None:
    """What is wrong with the characters and segments of a path, or None. The job-path
    rule's pieces (rules.job_paths), held differently: the path may be absolute (a
    site's shared area, a container path), ':' and ',' are refused, no name length limit."""
    if not value:
        return "is empty"
    if len(value) > MAX_PATH_CHARS:
        return f"is longer than {MAX_PATH_CHARS} characters"
    if has_control(value):
        return "contains a NUL, newline or other control character"
    for sep in SEPARATORS:
        if sep in value:
            return f"contains {sep!r}, which the runtimes read as a separator of bind options"
    segments = (value[1:] if value.startswith("/") else value).split("/")
    # A '..' anywhere is named before an empty or '.' name.
    fault = PathFault.PARENT if ".." in segments else name_fault(segments)
    if fault is PathFault.PARENT:
        return "contains a '..' segment"
    if fault is PathFault.EMPTY_NAME:
        return "contains an empty or '.' segment (no '//', './' or trailing '/')"
    return None


def check_absolute(value: str, what: str) -> str:
    """`value` when it is a plain absolute path (not `/` itself); InvalidBind otherwise."""
    problem = "is the root directory" if value == "/" else _problem(value)
    if problem is None and not value.startswith("/"):
        problem = "is not an absolute path"
    if problem is not None:
        raise InvalidBind(f"{what} {value!r} {problem}")
    return value


def under(path: str, prefix: str) -> bool:
    """True when absolute `path` is `prefix` or lies below it (whole segments only)."""
    return path == prefix or path.startswith(prefix + "/")


def resolve(bind: Bind, job_dir: str, allowed: Sequence[str] = ()) -> Mount:
    """The Mount for `bind` in the job directory `job_dir`; `allowed` are the absolute
    prefixes the site lets users bind besides their job directory."""
    check_absolute(job_dir, "the job directory")
    dst = check_absolute(bind.dst, "bind destination")
    src = bind.src
    if src.startswith("/"):
        check_absolute(src, "bind source")
        if not any(under(src, prefix) for prefix in allowed):
            where = (f"under {', '.join(allowed)} (the site's shared areas)" if allowed
                     else "(this site allows none)")
            raise InvalidBind(f"bind source {src!r} is outside the job directory: give a "
                              f"path relative to it, or an absolute path {where}")
        return Mount(src, dst, bind.read_only)
    if src.startswith("~"):
        raise InvalidBind(f"bind source {src!r} must be relative to the job directory, not "
                          "start with '~' (a home directory)")
    problem = _problem(src)
    if problem is not None:
        raise InvalidBind(f"bind source {src!r} {problem}")
    if src.split("/")[0] == CONTROL_DIR:
        raise InvalidBind(f"bind source {src!r} points into the gateway's control directory "
                          f"{CONTROL_DIR}/")
    return Mount(f"{job_dir}/{src}", dst, bind.read_only)


def resolve_all(binds: Sequence[Bind], job_dir: str, allowed: Sequence[str] = ()
                ) -> tuple[Mount, ...]:
    """Every bind resolved; two binds onto one container path are refused."""
    mounts = tuple(resolve(b, job_dir, allowed) for b in binds)
    guests = [m.guest for m in mounts]
    twice = sorted({g for g in guests if guests.count(g) > 1})
    if twice:
        raise InvalidBind(f"two binds end at {twice[0]!r} in the container: keep one")
    return mounts
