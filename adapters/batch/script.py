"""Building blocks of batch scripts, shared by every dialect. Pure.

A rendered script is: `#!<shell>`, the dialect's directive lines, the user script's mail
directives (the only ones that pass, rewritten: see adapters.batch.directives; every
option the gateway decides is also given on the command line, which wins over directives),
the environment, the site's setup lines, `cd`, and one `exec` line that runs the user's
program or their script, stored as its own file (never submitted itself). A container job's
`exec` line is the launch line the gateway built (`SubmitRequest.container`), after its
`prepare` commands; with steps after it (`then`), one line per step, in order.

Every value taken from a `SubmitRequest` that reaches a script line (names, paths,
arguments, environment values) goes through `shlex.quote`: it is data, never shell code.
A newline inside a value is written as `"$GRIDGATE_NL"`, so every line of the script is
the gateway's own: Grid Engine and LSF read directive lines anywhere in a script, and a
value's own line starting with `#$` or `#BSUB` would otherwise become a submit option.
Only site-config text (setup lines, MPI setup) is written as is: the site admin wrote it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from adapters.base import STEP_CODES_FILE, ContainerLaunch, Resources, SubmitRequest
from adapters.batch.arrays import ArrayShape, task_lines
from adapters.batch.directives import DirectiveRules, adapter_directives
from adapters.batch.types import DialectConfig, JobLayout, MpiFlavor
from adapters.errors import SubmitRejected
from rules.env_names import env_name_problem
from rules.text import ACCOUNT, JOB_TAG, PARTITION

# The shell variable holding a newline (see the module docstring).
NEWLINE_VAR = "GRIDGATE_NL"


def check_text(what: str, value: str, *, one_line: bool = False) -> None:
    """Refuse values no command line or script line can carry faithfully."""
    if "\x00" in value:
        raise SubmitRejected(f"{what} contains a NUL character")
    if one_line and ("\n" in value or "\r" in value):
        raise SubmitRejected(f"{what} contains a line break")


def check_request(request: SubmitRequest, *, path_forbidden: str = "") -> None:
    """Validate what every dialect relies on. `path_forbidden`: characters the scheduler
    reads as syntax in output paths (SGE and PBS take `host:path` and comma lists)."""
    if problem := JOB_TAG.problem(request.tag):
        raise SubmitRejected(problem)
    check_text("working directory", request.workdir, one_line=True)
    if not request.workdir.startswith("/") or "/../" in f"{request.workdir}/":
        raise SubmitRejected(f"working directory {request.workdir!r} is not an absolute path")
    bad = sorted({c for c in request.workdir if c in path_forbidden})
    if bad:
        raise SubmitRejected(
            f"working directory {request.workdir!r} contains {' '.join(bad)}, which this "
            "scheduler reads as syntax in output paths"
        )
    if (request.argv is None) == (request.script is None):
        raise SubmitRejected("a job needs exactly one of argv or script")
    if request.argv is not None:
        if not request.argv or not request.argv[0]:
            raise SubmitRejected("argv must name a program")
        if request.argv[0].startswith("-"):
            # `exec -x` would be read as an option by some shells (dash has no `--`).
            raise SubmitRejected(f"program name {request.argv[0]!r} must not start with '-'")
        for arg in request.argv:
            check_text("argument", arg)
    if request.script is not None:
        check_text("script", request.script)
    if request.container is not None:
        _check_container(request)
    for name, value in request.env.items():
        if problem := env_name_problem(name):
            raise SubmitRejected(problem)
        if name == NEWLINE_VAR:
            raise SubmitRejected(f"environment variable name {name!r} is reserved")
        check_text(f"environment variable {name}", value)
    res = request.resources
    if res.walltime_seconds <= 0:
        raise SubmitRejected("walltime must be positive")
    if res.nodes < 1 or res.ranks < 1 or res.threads_per_rank < 1:
        raise SubmitRejected("nodes, ranks and threads per rank must be at least 1")
    if res.ranks_per_node is not None and res.ranks_per_node < 1:
        raise SubmitRejected("ranks per node must be at least 1")
    if res.memory_mb is not None and res.memory_mb < 1:
        raise SubmitRejected("memory must be at least 1 MB")
    for rule, chosen in ((PARTITION, request.partition), (ACCOUNT, request.account)):
        if chosen is not None and (problem := rule.problem(chosen)):
            raise SubmitRejected(problem)


def _check_container(request: SubmitRequest) -> None:
    """A container job runs the gateway's launch line; its MPI launcher is in it."""
    container = request.container
    assert container is not None
    if request.argv is None:
        raise SubmitRejected("a container job runs a program (argv), not a batch script")
    if request.mpi.launcher != "none":
        raise SubmitRejected("a container job's MPI launcher is part of its launch line")
    for words in (*(step.argv for step in container.steps), *container.prepare):
        if not words or not words[0] or words[0].startswith("-"):
            raise SubmitRejected(f"container command {list(words)!r} must name a program")
        for word in words:
            check_text("container launch word", word)


def step_lines(launch: ContainerLaunch) -> list[str]:
    """The launch lines in order. One program replaces the shell (`exec`); steps each add
    their exit code to STEP_CODES_FILE, and a failure ends the script with it unless the
    step ignores errors."""
    if not launch.stepwise:
        return [f"exec {quote_argv(launch.argv)}"]
    codes = f'"$GRIDGATE_WORKDIR"/{STEP_CODES_FILE}'
    lines = []
    for step in launch.steps:
        lines += [quote_argv(step.argv), f"gridgate_code=$?; echo $gridgate_code >> {codes}"]
        if not step.ignore_error:
            lines.append('[ "$gridgate_code" -eq 0 ] || exit "$gridgate_code"')
    return [*lines, "exit 0"]


def hms(seconds: int) -> str:
    """`H:MM:SS` with as many hours as needed (SGE h_rt, PBS walltime)."""
    minutes, secs = divmod(max(seconds, 0), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def ceil_minutes(seconds: int) -> int:
    """Whole minutes, rounded up (LSF -W; a job never gets less than it asked for)."""
    return max(1, -(-seconds // 60))


def ranks_per_node(res: Resources) -> int:
    """Ranks on the busiest node."""
    if res.ranks_per_node is not None:
        return res.ranks_per_node
    return -(-res.ranks // res.nodes)


def quote_value(value: str) -> str:
    """One shell word, on one line, whose value is exactly `value` (newlines come from
    the variable NEWLINE_VAR, which the script sets first)."""
    return f'"${NEWLINE_VAR}"'.join(shlex.quote(part) for part in value.split("\n"))


def quote_argv(argv: Sequence[str]) -> str:
    """One shell command line, on one line, whose words are exactly `argv`."""
    return " ".join(quote_value(arg) for arg in argv)


# Words a scheduler's directive parser reads as they are (no quoting rules to rely on).
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./\[\]-]+")


def directive_lines(prefix: str, options: Sequence[Sequence[str]]) -> list[str]:
    """The options as directive lines (`#SBATCH --x=y`), so the script says what the job
    asked for. An option with a word that would need quoting is left out: directive
    parsers differ on quotes, and every option is also given on the command line."""
    return [" ".join([prefix, *option]) for option in options
            if all(_PLAIN_WORD.fullmatch(word) for word in option)]


def program_argv(request: SubmitRequest, layout: JobLayout, shell: str) -> list[str]:
    """The user's argv, or their stored script (run by `shell` unless it starts with `#!`)."""
    if request.script is not None:
        if request.script.startswith("#!"):
            return [layout.user_script]
        return [shell, layout.user_script]
    return list(request.argv or [])


def _flavor(request: SubmitRequest, config: DialectConfig) -> MpiFlavor | None:
    flavor = config.flavor(request.mpi.flavor)
    if flavor is None and request.mpi.flavor is not None:
        offered = ", ".join(f.name for f in config.mpi_flavors) or "none"
        raise SubmitRejected(
            f"MPI flavor {request.mpi.flavor!r} is not available at this site (offered: {offered})"
        )
    return flavor


def launcher_words(
    kind: str,
    command: Sequence[str],
    ranks: int,
    *,
    ranks_per_node: int | None = None,
    ranks_per_node_args: Sequence[str] = (),
    threads_per_rank: int = 1,
    srun_mpi: str | None = None,
) -> list[str]:
    """The launcher words before the program, from checked plain values: `command` (the
    site's mpirun, mpiexec or srun), then for srun `--mpi=srun_mpi` (when given) and
    `--cpus-per-task` (threads > 1), else `-n ranks` and `ranks_per_node_args` with {n} the
    ranks per node (when given). Shared by the batch scripts (mpi_launch) and the container
    launch lines (containers.launch), which check and word their refusals each their own way."""
    words = list(command)
    if kind == "srun":
        if srun_mpi is not None:
            words.append(f"--mpi={srun_mpi}")
        if threads_per_rank > 1:
            # srun no longer inherits --cpus-per-task from the allocation (Slurm 22.05).
            words.append(f"--cpus-per-task={threads_per_rank}")
        return words
    words += ["-n", str(ranks)]
    if ranks_per_node is not None:
        words += [a.replace("{n}", str(ranks_per_node)) for a in ranks_per_node_args]
    return words


def mpi_launch(
    request: SubmitRequest, config: DialectConfig, *, srun: str | None = None
) -> tuple[list[str], list[str]]:
    """The launcher words before the program, and the flavor's setup lines.

    `srun` is the Slurm binary; other schedulers pass None and `srun` jobs are refused.
    """
    launcher = request.mpi.launcher
    res = request.resources
    if launcher == "none":
        return [], []
    flavor = _flavor(request, config)
    setup = list(flavor.setup) if flavor else []
    if launcher == "mpirun":
        words = launcher_words(
            launcher,
            flavor.mpirun if flavor else ["mpirun"],
            res.ranks,
            ranks_per_node=res.ranks_per_node,
            ranks_per_node_args=flavor.ranks_per_node_args if flavor else (),
        )
        return words, setup
    if launcher == "srun":
        if srun is None:
            raise SubmitRejected(
                "mpi.launcher 'srun' needs a Slurm site; use 'mpirun' with this scheduler"
            )
        words = launcher_words(
            launcher,
            [srun],
            res.ranks,
            threads_per_rank=res.threads_per_rank,
            srun_mpi=(flavor.srun_mpi or None) if flavor else None,
        )
        return words, setup
    raise SubmitRejected(f"unknown MPI launcher {launcher!r}")


def render(
    request: SubmitRequest,
    layout: JobLayout,
    config: DialectConfig,
    *,
    directives: Sequence[str],
    user_rules: DirectiveRules,
    launch: Sequence[str] = (),
    launch_setup: Sequence[str] = (),
    array_shape: ArrayShape | None = None,
) -> str:
    """The whole batch script (see the module docstring for its shape); SubmitRejected
    when the user's script has a directive that may not pass (`user_rules`). A native
    array's tasks (`request.array`, numbered as `array_shape` says) each run in their
    own directory (adapters.batch.arrays)."""
    if request.array is not None and array_shape is None:
        raise SubmitRejected("this scheduler takes no job arrays")
    lines = [f"#!{config.shell}", *directives]
    lines += adapter_directives(request.script, user_rules)
    lines.append(f"# gridgate job {request.tag}: values from the request below are quoted data.")
    lines.append(f"{NEWLINE_VAR}='\n'")
    env = {
        "OMP_NUM_THREADS": str(request.resources.threads_per_rank),
        **dict(request.env),
        "GRIDGATE_JOB_TAG": request.tag,
        "GRIDGATE_WORKDIR": layout.workdir,
    }
    lines += [f"export {name}={quote_value(value)}" for name, value in env.items()]
    if request.array is not None and array_shape is not None:
        lines += task_lines(array_shape, layout.workdir, request.tag)
    lines += list(config.setup)
    lines += list(launch_setup)
    if request.array is not None:
        lines.append('cd "$GRIDGATE_WORKDIR" || exit 1')
    else:
        lines.append(f"cd {shlex.quote(layout.workdir)} || exit 1")
    if request.container is not None:
        # The gateway built the whole line (containers.launch); each word stays data.
        lines += [quote_argv(words) + " || exit 1" for words in request.container.prepare]
        lines += step_lines(request.container)
        return "\n".join(lines) + "\n"
    program = program_argv(request, layout, config.shell)
    lines.append("exec " + quote_argv([*launch, *program]))
    return "\n".join(lines) + "\n"
