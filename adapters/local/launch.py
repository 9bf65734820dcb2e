"""From a SubmitRequest to the exact argv and environment the runner executes. Pure."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from adapters.base import STEP_CODES_FILE, SubmitRequest
from adapters.errors import SubmitRejected
from adapters.local.records import LaunchPlan
from adapters.local.sandbox import SandboxConfig
from rules.env_names import env_name_problem

SHELL = "/bin/sh"
# An image unpacked in a staging cache of the site (`<cache>/<sha256>.d`).
_UNPACKED_IMAGE = re.compile(r"[0-9a-f]{64}\.d")


@dataclass(frozen=True)
class LaunchConfig:
    """Site settings that shape every job's launch."""

    mpiexec: str | None
    path: str
    # None: HOME is the job's own directory (in a sandbox, the only writable place).
    home: str | None
    lang: str
    kill_grace_seconds: float
    sandbox: SandboxConfig | None = None
    # The account's name, as USER and LOGNAME (batch schedulers set them; ch-run will not
    # start without $USER). None: left unset.
    user: str | None = None
    # The site's jobs root (resolved): the staging caches a launch line reads lie below.
    root: Path | None = None


def program_argv(request: SubmitRequest, script_path: Path) -> list[str]:
    """The user's program, before any MPI launcher. Never a shell command line."""
    if (request.argv is None) == (request.script is None):
        raise SubmitRejected("a job needs exactly one of argv or script")
    if request.script is not None:
        _check_text("script", request.script)
        # A script without "#!" is a POSIX shell script; it is the user's own program,
        # run as a file, so no string of ours is ever parsed by that shell.
        if request.script.startswith("#!"):
            return [str(script_path)]
        return [SHELL, str(script_path)]
    argv = list(request.argv or [])
    if not argv or not argv[0]:
        raise SubmitRejected("argv must name a program")
    for arg in argv:
        _check_text("argument", arg)
    return argv


def launch_argv(request: SubmitRequest, program: list[str], mpiexec: str | None) -> list[str]:
    """Prefix the program with the MPI launcher the request asks for."""
    launcher = request.mpi.launcher
    if launcher == "none":
        return program
    if launcher == "srun":
        raise SubmitRejected(
            "the local site has no Slurm: mpi.launcher 'srun' is not available here; "
            "use 'mpirun' (the site's mpiexec) or a Slurm site"
        )
    if launcher != "mpirun":
        raise SubmitRejected(f"unknown MPI launcher {launcher!r}")
    if mpiexec is None:
        raise SubmitRejected("the local site has no MPI launcher configured (mpiexec)")
    if request.resources.ranks < 1:
        raise SubmitRejected("ranks must be at least 1")
    return [mpiexec, "-n", str(request.resources.ranks), *program]


def container_argv(request: SubmitRequest) -> list[str]:
    """The gateway's launch line, run as it is (no shell on the local site, so no
    `prepare` commands: images come staged); several steps run under STEPS_SCRIPT."""
    container = request.container
    assert container is not None
    if request.mpi.launcher != "none":
        raise SubmitRejected("a container job's MPI launcher is part of its launch line")
    if container.prepare:
        raise SubmitRejected("the local site runs no preparing commands (registry pulls): "
                             "its images are staged by the gateway")
    for step in container.steps:
        if not step.argv or not step.argv[0]:
            raise SubmitRejected("the container launch line must name a program")
        for word in step.argv:
            _check_text("container launch word", word)
    if not container.stepwise:
        return list(container.argv)
    words = [word for step in container.steps
             for word in (str(int(step.ignore_error)), str(len(step.argv)), *step.argv)]
    return ["/bin/sh", "-c", STEPS_SCRIPT, STEP_CODES_FILE, *words]


# Runs launch lines in order, each adding its exit code to STEP_CODES_FILE (named by $0);
# its arguments are, per line: 1 when its failure is ignored (else 0), its count of words,
# its words. Only numbers reach `eval` ("${7}" names an argument, expanded once, as
# data), never a word.
STEPS_SCRIPT = r'''i=1
while [ "$i" -le "$#" ]; do
  eval "ignore=\${$i} count=\${$((i + 1))}"
  j=$((i + 2)) end=$((i + 2 + count)) line=
  while [ "$j" -lt "$end" ]; do line="$line \"\${$j}\""; j=$((j + 1)); done
  eval "$line"; code=$?
  echo "$code" >> "$GRIDGATE_WORKDIR/$0"
  [ "$code" -eq 0 ] || [ "$ignore" = 1 ] || exit "$code"
  i=$end
done'''


def container_reads(request: SubmitRequest, root: Path | None) -> tuple[str, ...]:
    """The directories the launch line reads besides the job's: only images unpacked in
    a staging cache directly below the site's jobs root (a hidden directory, never a job
    directory: the sandbox shows them, and nothing else of the site, read-only)."""
    reads = request.container.reads if request.container is not None else ()
    for path in reads:
        _check_text("container image directory", path)
        where = Path(path)
        if (root is None or not where.is_absolute() or posixpath.normpath(path) != path
                or not _UNPACKED_IMAGE.fullmatch(where.name)
                or not where.parent.name.startswith(".")
                or where.resolve().parent.parent != root):
            raise SubmitRejected(f"a container job may read only an image unpacked in the "
                                 f"site's staging cache, not {path!r}")
    return tuple(reads)


def job_environment(request: SubmitRequest, workdir: Path, config: LaunchConfig) -> dict[str, str]:
    """A clean environment: basics, then the user's values, then gridgate's own variables."""
    home = config.home if config.home is not None else str(workdir)
    env = {"PATH": config.path, "HOME": home, "LANG": config.lang}
    if config.user is not None:
        env["USER"] = env["LOGNAME"] = config.user
    # OMP_NUM_THREADS follows the requested threads per rank; a user value overrides it.
    env["OMP_NUM_THREADS"] = str(request.resources.threads_per_rank)
    for name, value in request.env.items():
        if problem := env_name_problem(name):
            raise SubmitRejected(problem)
        _check_text(f"environment variable {name}", value)
        env[name] = value
    env["GRIDGATE_JOB_TAG"] = request.tag
    env["GRIDGATE_WORKDIR"] = str(workdir)
    return env


def build_plan(
    request: SubmitRequest, native_id: str, workdir: Path, script_path: Path, config: LaunchConfig
) -> LaunchPlan:
    """Validate the request and fix everything the runner needs."""
    _check_text("tag", request.tag)
    if not request.tag:
        raise SubmitRejected("the job tag is empty")
    if request.resources.walltime_seconds <= 0:
        raise SubmitRejected("walltime must be positive")
    if request.resources.threads_per_rank < 1:
        raise SubmitRejected("threads_per_rank must be at least 1")
    argv = launch_argv(request, program_argv(request, script_path), config.mpiexec)
    reads: tuple[str, ...] = ()
    if request.container is not None:
        argv = container_argv(request)
        reads = container_reads(request, config.root)
    return LaunchPlan(
        tag=request.tag,
        native_id=native_id,
        argv=tuple(argv),
        env=job_environment(request, workdir, config),
        walltime_seconds=float(request.resources.walltime_seconds),
        kill_grace_seconds=config.kill_grace_seconds,
        sandbox=config.sandbox,
        reads=reads,
    )


def _check_text(what: str, value: str) -> None:
    # execve takes C strings: a NUL would silently cut the value short.
    if "\x00" in value:
        raise SubmitRejected(f"{what} contains a NUL character")
