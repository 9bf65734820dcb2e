"""Launch lines: the argv that starts a containerised program, every word its own element.

    [launcher] [env NAME=VALUE ...] RUNTIME [options] IMAGE [--] PROGRAM [ARG ...]

- Launchers as the adapters write them: `mpirun -n N [placement]` (the site's own mpirun or
  mpiexec), `srun --mpi=PLUGIN` (the ranks of the allocation; Slurm sites only), or none.
- apptainer / singularity: `exec`; `--no-eval` so that environment values are data, never
  shell; mode none adds `--containall` (own PID, IPC, environment, no host home), the MPI
  modes `--no-home` instead: the ranks must share IPC and /dev with the host and receive
  the launcher's PMI variables, which `--containall` and `--cleanenv` would take away. The
  job directory is bound at its own path and is the working directory (`--pwd`). `--nv`
  with GPUs. Variables go in as APPTAINERENV_NAME / SINGULARITYENV_NAME through `env`: the
  runtime forwards them exactly, where `--env` is parsed as CSV once a value holds '='.
- ch-run (Charliecloud 0.31): `-b SRC:DST`, `-c DIR`, `--env-no-expand`, a bare
  `--set-env` for the image's own environment (/ch/environment, which ch-run needs to
  exist: `image_environment`), then one `--set-env=NAME='VALUE'` per job variable, so
  the job's win (ch-run strips one pair of single quotes, so any value survives), then
  `IMAGE -- PROGRAM`. Under a launcher the ranks of one node join
  one container (`--join-ct`, `--join-tag`) so that MPI can use cross-memory attach; the tag
  is the job's own, since ch-run's default (SLURM_STEP_ID) repeats between jobs of one
  account on a node. ch-run makes a missing bind destination only in a writable image, so
  the job directory goes to /mnt/0, which images built by ch-image have.

`shell_line` renders an argv for a batch script, each word through shlex.quote.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from adapters.batch.script import launcher_words
from containers.binds import Bind, Mount, check_absolute, resolve_all, under
from containers.errors import ContainerError, InvalidLaunch
from containers.redirects import Redirects
from containers.runtimes import LauncherKind, MpiMode, RuntimeKind
from containers.site_caps import SLURM, MpiOffer, RuntimeOffer
from rules.env_names import env_name_problem
from rules.text import JOB_TAG

CHARLIECLOUD_WORKDIR = "/mnt/0"
ENV_PREFIX = {RuntimeKind.APPTAINER: "APPTAINERENV_", RuntimeKind.SINGULARITY: "SINGULARITYENV_"}
# Apptainer refuses to set these from APPTAINERENV_ (it warns and goes on without them).
APPTAINER_RESERVED = frozenset({"HOME"})
LIBRARY_PATH = "LD_LIBRARY_PATH"


@dataclass(frozen=True)
class Launcher:
    """How the ranks start. `command` replaces the launcher's plain name (a site's
    `mpirun.openmpi`, a full path to srun); `ranks_per_node_args` place {n} ranks per node
    with mpirun or mpiexec; `srun_mpi` is srun's plugin."""

    kind: LauncherKind = LauncherKind.NONE
    ranks: int = 1
    ranks_per_node: int | None = None
    threads_per_rank: int = 1
    command: tuple[str, ...] = ()
    ranks_per_node_args: tuple[str, ...] = ()
    srun_mpi: str | None = None

    @classmethod
    def of(cls, offer: MpiOffer, kind: LauncherKind, ranks: int,
           ranks_per_node: int | None = None, threads_per_rank: int = 1) -> Launcher:
        """The launcher `kind` of the site's MPI `offer`."""
        if kind not in offer.launchers:
            raise InvalidLaunch(f"MPI flavour {offer.name!r} is not started with {kind.value} "
                                f"(it lists {', '.join(x.value for x in offer.launchers)})")
        if kind is LauncherKind.SRUN:
            return cls(kind, ranks, ranks_per_node, threads_per_rank, srun_mpi=offer.srun_mpi)
        own = kind is offer.library_launcher
        return cls(kind, ranks, ranks_per_node, threads_per_rank,
                   command=offer.command if own else (),
                   ranks_per_node_args=offer.ranks_per_node_args if own else ())


@dataclass(frozen=True)
class ContainerRun:
    """One containerised program. `image` is the staged image on the site (a SIF file, or
    for ch-run an unpacked directory or SquashFS file); `job_dir` the job's directory there.
    `bind_prefixes` are the site's shared areas users may bind; `site_mpi` the site MPI
    whose libraries bind mode mounts. `join_tag` names a ch-run peer group (e.g. the job's
    gateway tag). `writable`: ch-run -w, only for an image unpacked in the job directory.
    `image_environment`: the image holds /ch/environment, which ch-run applies (Apptainer
    and Singularity apply an image's environment themselves). `cwd`: the working
    directory inside the container (default: where the job directory is bound);
    `redirects`: files inside it for the program's standard streams (`redirects.py`)."""

    runtime: RuntimeOffer
    image: str
    command: tuple[str, ...]
    job_dir: str
    mode: MpiMode = MpiMode.NONE
    binds: tuple[Bind, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    bind_prefixes: tuple[str, ...] = ()
    site_mpi: MpiOffer | None = None
    gpus: bool = False
    join_tag: str | None = None
    writable: bool = False
    image_environment: bool = False
    cwd: str | None = None
    redirects: Redirects = field(default_factory=Redirects)


def _absolute(value: str, what: str) -> str:
    try:
        return check_absolute(value, what)
    except ContainerError as exc:
        raise InvalidLaunch(exc.message) from None


def launcher_argv(launcher: Launcher, scheduler: str) -> list[str]:
    """The words before the container: the same forms the adapters' batch scripts use."""
    kind = launcher.kind
    if launcher.ranks < 1 or launcher.threads_per_rank < 1:
        raise InvalidLaunch("ranks and threads per rank must be at least 1")
    if launcher.ranks_per_node is not None and launcher.ranks_per_node < 1:
        raise InvalidLaunch("ranks per node must be at least 1")
    if kind is LauncherKind.NONE:
        if launcher.ranks != 1:
            raise InvalidLaunch(f"{launcher.ranks} ranks need a launcher (mpirun, mpiexec or "
                                "srun); without one the program runs once")
        return []
    if kind is LauncherKind.SRUN:
        if scheduler != SLURM:
            raise InvalidLaunch(f"srun needs a Slurm site (this one runs {scheduler}): use "
                                "mpirun or mpiexec")
        if launcher.srun_mpi is None:
            raise InvalidLaunch("srun needs the site's MPI plugin (srun_mpi), e.g. pmix")
    return launcher_words(kind.value, launcher.command or (kind.value,), launcher.ranks,
                          ranks_per_node=launcher.ranks_per_node,
                          ranks_per_node_args=launcher.ranks_per_node_args,
                          threads_per_rank=launcher.threads_per_rank,
                          srun_mpi=launcher.srun_mpi)


def _check_env(env: Mapping[str, str], runtime: RuntimeKind) -> None:
    for name, value in env.items():
        if problem := env_name_problem(name):
            raise InvalidLaunch(problem)
        if "\x00" in value:
            raise InvalidLaunch(f"the value of {name} contains a NUL byte, which no program "
                                "argument can carry")
        if runtime is not RuntimeKind.CHARLIECLOUD and name in APPTAINER_RESERVED:
            raise InvalidLaunch(f"{runtime.value} sets {name} itself and ignores a new value: "
                                "leave it out")


def _mpi_env(run: ContainerRun) -> dict[str, str]:
    """The job's variables, with bind mode's site libraries first on LD_LIBRARY_PATH."""
    env = dict(run.env)
    if run.mode is MpiMode.BIND and run.site_mpi is not None and run.site_mpi.library_path:
        paths = list(run.site_mpi.library_path)
        if env.get(LIBRARY_PATH):
            paths.append(env[LIBRARY_PATH])
        env[LIBRARY_PATH] = ":".join(paths)
    return env


def _mounts(run: ContainerRun, workdir: str) -> list[Mount]:
    mounts = [Mount(run.job_dir, workdir)]
    if run.mode is MpiMode.BIND:
        if run.site_mpi is None or not run.site_mpi.bind_paths:
            raise InvalidLaunch("bind mode needs the site's MPI bind paths: this site "
                                "declares none for the chosen MPI")
        mounts += [Mount(p, p, read_only=True) for p in run.site_mpi.bind_paths]
    try:
        mounts += resolve_all(run.binds, run.job_dir, run.bind_prefixes)
    except ContainerError as exc:
        raise InvalidLaunch(exc.message) from None
    guests = [m.guest for m in mounts]
    twice = sorted({g for g in guests if guests.count(g) > 1})
    if twice:
        raise InvalidLaunch(f"two binds end at {twice[0]!r} in the container (the job "
                            "directory and the site's MPI paths are bound already): keep one")
    return mounts


def container_argv(run: ContainerRun, launcher: Launcher) -> list[str]:
    """`[env ...] RUNTIME ... IMAGE [--] PROGRAM ARGS` for one rank (or the one process)."""
    kind = run.runtime.kind
    _absolute(run.job_dir, "the job directory")
    if run.cwd is not None:
        _absolute(run.cwd, "the working directory")
    _absolute(run.image, "the image path")
    if not run.command or any("\x00" in w for w in run.command) or not run.command[0]:
        raise InvalidLaunch("give the program to run in the container as a non-empty argv "
                            "without NUL bytes")
    if (run.mode is MpiMode.NONE) != (launcher.kind is LauncherKind.NONE):
        raise InvalidLaunch("MPI mode none runs one process without a launcher; hybrid and "
                            "bind need one (mpirun, mpiexec or srun)")
    if run.redirects and run.mode is not MpiMode.NONE:
        raise InvalidLaunch("stdin, stdout and stderr files are for one process (MPI mode "
                            "none): the ranks of an MPI job would write over each other")
    run = replace(run, command=run.redirects.wrap(run.command))
    env = _mpi_env(run)
    _check_env(env, kind)
    if kind is RuntimeKind.CHARLIECLOUD:
        return _charliecloud(run, launcher, env)
    return _apptainer(run, env)


def _apptainer(run: ContainerRun, env: Mapping[str, str]) -> list[str]:
    kind = run.runtime.kind
    if run.writable:
        raise InvalidLaunch(f"{kind.value} runs SIF images read-only: write to the job "
                            "directory or a bind instead")
    prefix = ENV_PREFIX[kind]
    words = ["env", *(f"{prefix}{k}={v}" for k, v in env.items())] if env else []
    words += [*run.runtime.argv, "exec"]
    words.append("--containall" if run.mode is MpiMode.NONE else "--no-home")
    words.append("--no-eval")
    if run.gpus:
        words.append("--nv")
    for mount in _mounts(run, run.job_dir):
        words += ["--bind", mount.spec]
    # --pwd: the spelling of every release since Apptainer 1.1 and SingularityCE 3.10
    # (later Apptainer releases add --cwd and keep --pwd as its synonym).
    words += ["--pwd", run.cwd or run.job_dir, run.image, *run.command]
    return words


def _charliecloud(run: ContainerRun, launcher: Launcher, env: Mapping[str, str]) -> list[str]:
    if run.mode is MpiMode.BIND:
        raise InvalidLaunch("charliecloud brings host MPI into an image with ch-fromhost "
                            "(which changes the image), not with binds: use hybrid mode or "
                            "apptainer")
    if run.gpus:
        raise InvalidLaunch("ch-run has no GPU option (ch-fromhost --nvidia changes the "
                            "image): use apptainer or singularity for GPUs")
    words = list(run.runtime.argv)
    if launcher.kind is not LauncherKind.NONE:
        if launcher.ranks_per_node is None or run.join_tag is None:
            raise InvalidLaunch("ch-run joins the ranks of a node in one container: give "
                                "the ranks per node and a join tag (the job's tag)")
        try:
            JOB_TAG.check(run.join_tag)
        except ValueError as exc:
            raise InvalidLaunch(str(exc)) from None
        if launcher.ranks % launcher.ranks_per_node != 0:
            # A node with fewer ranks than --join-ct would wait for peers that never come.
            raise InvalidLaunch(f"{launcher.ranks} ranks do not fill nodes of "
                                f"{launcher.ranks_per_node}: ch-run --join needs the same "
                                "number of ranks on every node")
        words += ["--join-ct", str(launcher.ranks_per_node), "--join-tag", run.join_tag]
    if run.writable:
        if not under(run.image, run.job_dir):
            raise InvalidLaunch("ch-run -w writes into the image: only for an image unpacked "
                                "in the job directory, never a shared cached one")
        words.append("-w")
    mounts = _mounts(run, CHARLIECLOUD_WORKDIR)
    if any(m.read_only for m in mounts):
        raise InvalidLaunch("ch-run (0.31) has no read-only binds: drop read_only or use "
                            "apptainer")
    for mount in mounts:
        words += ["-b", f"{mount.host}:{mount.guest}"]
    words += ["-c", run.cwd or CHARLIECLOUD_WORKDIR]
    if env or run.image_environment:
        # --set-env expands $VAR in values unless --env-no-expand comes first; the image's
        # values were expanded when it was built, as a Dockerfile's ENV is.
        words.append("--env-no-expand")
    if run.image_environment:
        words.append("--set-env")
    words += [f"--set-env={k}='{v}'" for k, v in env.items()]
    words += [run.image, "--", *run.command]
    return words


def launch_argv(run: ContainerRun, launcher: Launcher, scheduler: str) -> list[str]:
    """The whole launch line: launcher words, then the container's."""
    return launcher_argv(launcher, scheduler) + container_argv(run, launcher)


def shell_line(argv: Sequence[str]) -> str:
    """`argv` as one line of a batch script: each word shlex.quote'd, so words stay data."""
    if not argv:
        raise InvalidLaunch("nothing to run: the argv is empty")
    if any("\x00" in w for w in argv):
        raise InvalidLaunch("a word contains a NUL byte, which no shell line can carry")
    return " ".join(shlex.quote(w) for w in argv)
