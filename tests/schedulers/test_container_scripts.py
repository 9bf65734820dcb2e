"""Container jobs in every dialect's batch script: the exec line is exactly the launch line
the gateway built (containers.launch), each word quoted, for each runtime x launcher; and
a rendered script run by /bin/sh hands the runtime exactly those words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.base import ContainerLaunch, MpiRequest, Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout, SchedulerDialect
from adapters.errors import SubmitRejected
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.runtimes import LauncherKind, MpiImpl, MpiMode, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer
from containers.versions import version
from tests.schedulers.test_script_shell import run_script, stub

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000042"
JOB = "/scratch/gw-job"
SIF = f"{JOB}/.gridgate-image"
OFFERS = {
    "apptainer": RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5")),
    "singularity": RuntimeOffer(RuntimeKind.SINGULARITY, version("3.11.4"),
                                ("/opt/singularity/bin/singularity",)),
    "charliecloud": RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31")),
}
MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"),
                 (LauncherKind.MPIRUN, LauncherKind.SRUN), command=("mpirun.mpich",),
                 ranks_per_node_args=("-ppn", "{n}"), srun_mpi="pmi2")
DIALECTS = {"slurm": SlurmDialect, "sge": lambda: SgeDialect(parallel_environment="mpi"),
            "pbs": PbsDialect, "lsf": LsfDialect}
SCHEDULER = {"slurm": "slurm", "sge": "sge", "pbs": "pbs", "lsf": "lsf"}
ENV = {"GREETING": "hello world"}
SET_ENV = "'--set-env=GREETING='\"'\"'hello world'\"'\"''"

# (runtime, launcher) -> the exact exec line, whatever the dialect (srun: Slurm only).
EXPECTED = {
    ("apptainer", "none"):
        "exec env 'APPTAINERENV_GREETING=hello world' apptainer exec --containall --no-eval "
        f"--bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("apptainer", "mpirun"):
        "exec mpirun.mpich -n 4 -ppn 2 env 'APPTAINERENV_GREETING=hello world' apptainer exec "
        f"--no-home --no-eval --bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("apptainer", "srun"):
        "exec srun --mpi=pmi2 env 'APPTAINERENV_GREETING=hello world' apptainer exec "
        f"--no-home --no-eval --bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("singularity", "none"):
        "exec env 'SINGULARITYENV_GREETING=hello world' /opt/singularity/bin/singularity exec "
        f"--containall --no-eval --bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("singularity", "mpirun"):
        "exec mpirun.mpich -n 4 -ppn 2 env 'SINGULARITYENV_GREETING=hello world' "
        "/opt/singularity/bin/singularity exec --no-home --no-eval "
        f"--bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("singularity", "srun"):
        "exec srun --mpi=pmi2 env 'SINGULARITYENV_GREETING=hello world' "
        "/opt/singularity/bin/singularity exec --no-home --no-eval "
        f"--bind {JOB}:{JOB} --pwd {JOB} {SIF} ./app 'two words'",
    ("charliecloud", "none"):
        f"exec ch-run -b {JOB}:/mnt/0 -c /mnt/0 --env-no-expand "
        f"{SET_ENV} {SIF} -- ./app 'two words'",
    ("charliecloud", "mpirun"):
        f"exec mpirun.mpich -n 4 -ppn 2 ch-run --join-ct 2 --join-tag {TAG} "
        f"-b {JOB}:/mnt/0 -c /mnt/0 --env-no-expand "
        f"{SET_ENV} {SIF} -- ./app 'two words'",
    ("charliecloud", "srun"):
        f"exec srun --mpi=pmi2 ch-run --join-ct 2 --join-tag {TAG} "
        f"-b {JOB}:/mnt/0 -c /mnt/0 --env-no-expand "
        f"{SET_ENV} {SIF} -- ./app 'two words'",
}


def built(runtime: str, launcher: str, scheduler: str) -> tuple[str, ...]:
    kind = LauncherKind(launcher)
    mode = MpiMode.NONE if kind is LauncherKind.NONE else MpiMode.HYBRID
    ranks, per_node = (1, None) if kind is LauncherKind.NONE else (4, 2)
    launch = (Launcher() if kind is LauncherKind.NONE
              else Launcher.of(MPICH, kind, ranks, per_node))
    run = ContainerRun(OFFERS[runtime], SIF, ("./app", "two words"), JOB, mode, env=ENV,
                       join_tag=TAG)
    return tuple(launch_argv(run, launch, scheduler))


def request(argv: tuple[str, ...], prepare: tuple[tuple[str, ...], ...] = ()) -> SubmitRequest:
    return SubmitRequest(tag=TAG, workdir=JOB, argv=["./app", "two words"],
                         resources=Resources(nodes=2, ranks=4, ranks_per_node=2),
                         container=ContainerLaunch(argv, prepare))


CASES = [(d, r, lch) for d in DIALECTS for (r, lch) in EXPECTED if lch != "srun" or d == "slurm"]


@pytest.mark.parametrize(("dialect", "runtime", "launcher"), CASES)
def test_exec_line_is_the_launch_line(dialect: str, runtime: str, launcher: str) -> None:
    made: SchedulerDialect = DIALECTS[dialect]()  # type: ignore[operator]
    script = made.render_script(request(built(runtime, launcher, SCHEDULER[dialect])),
                                JobLayout.of(JOB))
    lines = script.splitlines()
    assert lines[-1] == EXPECTED[(runtime, launcher)]
    assert lines[-2] == f"cd {JOB} || exit 1"
    assert sum(line.startswith("exec ") for line in lines) == 1


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_prepare_lines_come_before_the_exec_line(dialect: str) -> None:
    pull = ("flock", "/cache/.x.lock", "sh", "-c", "test -e \"$1\"", "sh", "/cache/x.sif")
    made: SchedulerDialect = DIALECTS[dialect]()  # type: ignore[operator]
    lines = made.render_script(request(built("apptainer", "none", dialect), (pull,)),
                               JobLayout.of(JOB)).splitlines()
    assert lines[-2] == ("flock /cache/.x.lock sh -c 'test -e \"$1\"' sh /cache/x.sif "
                         "|| exit 1")
    assert lines[-1] == EXPECTED[("apptainer", "none")]


@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_container_jobs_refuse_a_second_launcher_or_a_script(dialect: str) -> None:
    made: SchedulerDialect = DIALECTS[dialect]()  # type: ignore[operator]
    plain = request(built("apptainer", "none", dialect))
    with pytest.raises(SubmitRejected, match="launch line"):
        made.render_script(SubmitRequest(**{**plain.__dict__, "mpi": MpiRequest("mpirun")}),
                           JobLayout.of(JOB))
    with pytest.raises(SubmitRejected, match="not a batch script"):
        made.render_script(SubmitRequest(**{**plain.__dict__, "argv": None, "script": "x"}),
                           JobLayout.of(JOB))
    with pytest.raises(SubmitRejected, match="must name a program"):
        made.render_script(request(("-x",)), JobLayout.of(JOB))


def test_the_shell_hands_the_runtime_exactly_the_built_words(tmp_path: Path) -> None:
    """The runtime (a stub recording its argv) gets the words as built, hostile ones too."""
    runtime = stub(tmp_path, "apptainer")
    workdir = tmp_path / "job"
    workdir.mkdir()
    hostile = ("./app", f"$(touch {tmp_path}/canary)", "a\nb", "'")
    run = ContainerRun(OFFERS["apptainer"], f"{workdir}/img", hostile, str(workdir),
                       env={"X": "`touch canary`"})
    argv = [str(runtime) if w == "apptainer" else w
            for w in launch_argv(run, Launcher(), "slurm")]
    script = SlurmDialect(DialectConfig()).render_script(
        SubmitRequest(tag=TAG, workdir=str(workdir), argv=["./app"],
                      container=ContainerLaunch(tuple(argv))), JobLayout.of(str(workdir)))
    run_script(script, tmp_path)
    seen = json.loads((workdir / "apptainer.json").read_text())
    assert seen["argv"] == argv[3:]
    assert not (tmp_path / "canary").exists()
