"""Rendered batch scripts run by a real /bin/sh: request data stays data.

Each dialect's script is written to a temporary directory and run with /bin/sh, as a
scheduler would run it, with the user's program (and the MPI launcher) replaced by a stub
that records the argv, working directory and environment it was started with. Hostile
text in environment values, arguments and the working directory must arrive verbatim and
never run: the canary files it tries to create must not exist afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.base import MpiRequest, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout, MpiFlavor, SchedulerDialect
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.sge import SgeDialect
from adapters.slurm import SlurmCommands, SlurmDialect

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000042"
STUB = """#!{python}
import json, os, sys
with open(os.path.join(os.getcwd(), {name!r}), "w") as out:
    json.dump({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}, out)
"""


# Grid Engine and LSF read directive lines anywhere in a script: a value's own lines must
# never become lines of the batch script.
DIRECTIVE_LINES = ("x\n#$ -P other\n#BSUB -G admins\n  #SBATCH --account=other\n"
                   "#PBS -A other\n\n")
PREFIXES = ("#SBATCH", "#$", "#PBS", "#BSUB")


def stub(directory: Path, name: str) -> Path:
    path = directory / name
    path.write_text(STUB.format(python=sys.executable, name=f"{name}.json"))
    path.chmod(0o755)
    return path


def hostile(canaries: Path) -> tuple[dict[str, str], list[str]]:
    env = {
        "EVIL_SUBST": f"$(touch {canaries}/env-subst)",
        "EVIL_TICKS": f"`touch {canaries}/env-ticks`",
        "EVIL_QUOTE": f"'; touch {canaries}/env-quote; echo '",
        "EVIL_LINES": 'line one\nline "two" $HOME \\ end',
        "EVIL_DIRECTIVES": DIRECTIVE_LINES,
        "EVIL_GLOB": "${IFS}*?[a]",
        "EMPTY": "",
    }
    args = [f"; touch {canaries}/arg-semicolon", f"$(touch {canaries}/arg-subst)", "*", "",
            "two words", "--option", "'\"", "\\n", "$((1+1))", DIRECTIVE_LINES, "\n"]
    return env, args


def dialects(bin_dir: Path) -> dict[str, Callable[[DialectConfig], SchedulerDialect]]:
    srun = str(stub(bin_dir, "srun"))
    return {
        "slurm": lambda c: SlurmDialect(c, SlurmCommands(srun=srun)),
        "sge": lambda c: SgeDialect(c, parallel_environment="mpi"),
        "pbs": lambda c: PbsDialect(c),
        "lsf": lambda c: LsfDialect(c),
    }


def run_script(script: str, tmp_path: Path) -> None:
    path = tmp_path / "batch.sh"
    path.write_text(script)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    done = subprocess.run(["/bin/sh", str(path)], cwd=elsewhere, capture_output=True,
                          env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.parametrize("kind", ["slurm", "sge", "pbs", "lsf"])
def test_hostile_argv_env_and_workdir_are_inert(kind: str, tmp_path: Path) -> None:
    canaries = tmp_path / "canaries"
    canaries.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = stub(bin_dir, "program")
    # No '/' possible in a name: this canary would land in the shell's working directory.
    workdir = tmp_path / "work dir $(touch canary-workdir) `touch canary-ticks` 'q' \"d\" ;x"
    workdir.mkdir()
    env, args = hostile(canaries)
    request = SubmitRequest(tag=TAG, workdir=str(workdir), argv=[str(program), *args], env=env,
                            resources=Resources(threads_per_rank=3))
    dialect = dialects(bin_dir)[kind](DialectConfig())
    run_script(dialect.render_script(request, JobLayout.of(str(workdir))), tmp_path)

    seen = json.loads((workdir / "program.json").read_text())
    assert seen["argv"] == args
    assert seen["cwd"] == str(workdir)
    for name, value in env.items():
        assert seen["env"][name] == value
    assert seen["env"]["GRIDGATE_JOB_TAG"] == TAG
    assert seen["env"]["GRIDGATE_WORKDIR"] == str(workdir)
    assert seen["env"]["OMP_NUM_THREADS"] == "3"
    assert list(canaries.iterdir()) == []
    assert list(tmp_path.rglob("canary-*")) == []


@pytest.mark.parametrize("kind", ["slurm", "sge", "pbs", "lsf"])
def test_no_value_adds_a_line_to_the_batch_script(kind: str, tmp_path: Path) -> None:
    env, args = hostile(tmp_path)
    request = SubmitRequest(tag=TAG, workdir="/scratch/job", argv=["/bin/prog", *args],
                            env=env)
    dialect = dialects(tmp_path)[kind](DialectConfig())
    lines = dialect.render_script(request, JobLayout.of("/scratch/job")).splitlines()
    ours = lines[:next(i for i, line in enumerate(lines) if line.startswith("# gridgate job"))]
    directives = [line for line in lines if line.lstrip().startswith(PREFIXES)]
    assert directives and all(line in ours for line in directives), directives


@pytest.mark.parametrize("kind", ["slurm", "sge", "pbs", "lsf"])
def test_mpi_launcher_gets_the_exact_program_argv(kind: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mpirun = stub(bin_dir, "mpirun")
    flavor = MpiFlavor("mpich", mpirun=(str(mpirun), "--bind-to", "core"),
                       setup=(f"export FROM_SETUP=site-{kind}",))
    workdir = tmp_path / "job"
    workdir.mkdir()
    request = SubmitRequest(tag=TAG, workdir=str(workdir), argv=["./pingpong", "$HOME", "a b"],
                            resources=Resources(nodes=1, ranks=4), mpi=MpiRequest("mpirun"))
    dialect = dialects(bin_dir)[kind](DialectConfig(mpi_flavors=(flavor,)))
    run_script(dialect.render_script(request, JobLayout.of(str(workdir))), tmp_path)
    seen = json.loads((workdir / "mpirun.json").read_text())
    assert seen["argv"] == ["--bind-to", "core", "-n", "4", "./pingpong", "$HOME", "a b"]
    assert seen["env"]["FROM_SETUP"] == f"site-{kind}"  # site setup lines do run


def test_srun_launch_on_slurm(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    workdir = tmp_path / "job"
    workdir.mkdir()
    flavor = MpiFlavor("openmpi", srun_mpi="pmix")
    request = SubmitRequest(tag=TAG, workdir=str(workdir), argv=["./app", "x;y"],
                            resources=Resources(ranks=2, threads_per_rank=2),
                            mpi=MpiRequest("srun", "openmpi"))
    dialect = dialects(bin_dir)["slurm"](DialectConfig(mpi_flavors=(flavor,)))
    run_script(dialect.render_script(request, JobLayout.of(str(workdir))), tmp_path)
    seen = json.loads((workdir / "srun.json").read_text())
    assert seen["argv"] == ["--mpi=pmix", "--cpus-per-task=2", "./app", "x;y"]


@pytest.mark.parametrize("shebang", [True, False])
def test_user_script_runs_from_the_control_directory(shebang: bool, tmp_path: Path) -> None:
    workdir = tmp_path / "job"
    layout = JobLayout.of(str(workdir))
    Path(layout.control_dir).mkdir(parents=True)
    body = 'printf "%s|%s" "$GREETING" "$(pwd)" > out.txt\n'
    head = "#!/bin/sh\n#SBATCH --mail-type=END\n" if shebang else "#SBATCH --mail-type END\n"
    script = head + body
    # What BatchAdapter.submit stores with put_bytes(..., mode=0o700).
    Path(layout.user_script).write_text(script)
    Path(layout.user_script).chmod(0o700)
    request = SubmitRequest(tag=TAG, workdir=str(workdir), script=script,
                            env={"GREETING": "hello $(world)"})
    rendered = SlurmDialect().render_script(request, layout)
    assert "#SBATCH --mail-type=END" in rendered.splitlines()
    run_script(rendered, tmp_path)
    assert (workdir / "out.txt").read_text() == f"hello $(world)|{workdir}"
    assert os.stat(layout.user_script).st_mode & 0o777 == 0o700
