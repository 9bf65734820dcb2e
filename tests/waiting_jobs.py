"""Jobs that keep running until the test lets them go.

A test that needs a job still running when it looks must not bet on the job's duration:
on a loaded machine a `sleep 3` has ended before the worker even saw it start. A waiting
job loops until a file named `go` appears in its own directory (`$GRIDGATE_WORKDIR`, the
one path every job sees, in the local site's sandbox as at a batch site), which the test
creates once it has seen what it needed. At a testbed site, jobs may wait for a path of
the site's own instead (its /tmp), which the test creates through the site's holder. A
job never let go ends only by a cancel or its walltime.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from sqlalchemy import select

from adapters.local.files import CONTROL_DIR
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from testbed.holder import site_path
from testbed.state import SiteInfo

GO = "go"


def _until_exists(path: str) -> str:
    return f"while [ ! -e {path} ]; do sleep 0.2; done"


WAIT = _until_exists(f'"$GRIDGATE_WORKDIR/{GO}"')


def waits(then: str = "", go: str | None = None) -> str:
    """A shell command: wait to be let go (by the file `go`, an absolute path, if given),
    then run the command `then`."""
    wait = WAIT if go is None else _until_exists(shlex.quote(go))
    return f"{wait}; {then}" if then else wait


def let_go(workdir: str | Path) -> bool:
    """Let the job in `workdir` go on; False if its directory does not exist (yet)."""
    try:
        (Path(workdir) / GO).touch()
    except FileNotFoundError:
        return False
    return True


def let_jobs_go(runtime: Runtime, *job_ids: str) -> list[Path]:
    """Let every attempt of `job_ids` whose directory exists go on; their directories."""
    with runtime.sessions() as session:
        workdirs = session.scalars(select(Attempt.workdir)
                                   .where(Attempt.job_id.in_(job_ids))).all()
    return [Path(w) for w in workdirs if let_go(w)]


def let_go_at(site: SiteInfo, go: str) -> None:
    """Create the file `go` inside a testbed site, through its holder's view of the site's
    files (no ssh: this works while the site's sshd is down too)."""
    site_path(site.holder_pid, go).touch()


def local_job_dirs(jobs_dir: Path) -> list[Path]:
    """The directories of the jobs the local site has taken (they hold its control files)."""
    if not jobs_dir.is_dir():
        return []
    return sorted(d for d in jobs_dir.iterdir() if (d / CONTROL_DIR).is_dir())


def let_all_go(jobs_dir: Path) -> None:
    """Let every job the local site with jobs root `jobs_dir` has taken so far go on."""
    for workdir in local_job_dirs(jobs_dir):
        let_go(workdir)
