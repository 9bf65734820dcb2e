"""Launch lines: the exact argv for each runtime x launcher x mode, and every refusal.

Flags as documented: apptainer `exec` options from apptainer's cmd/internal/cli/
action_flags.go (--bind, --containall, --no-home, --no-eval, --nv, --pwd) and the
APPTAINERENV_/SINGULARITYENV_ prefix from internal/pkg/util/env/create.go; ch-run's from
Charliecloud 0.31 (doc/ch-run.rst, bin/ch-run.c: -b, -c, --join-ct, --join-tag,
--env-no-expand, --set-env=NAME=VALUE, -w).
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from containers.binds import Bind
from containers.errors import ContainerError, InvalidLaunch
from containers.launch import (
    ContainerRun,
    Launcher,
    container_argv,
    launch_argv,
    launcher_argv,
    shell_line,
)
from containers.redirects import Redirects
from containers.runtimes import LauncherKind, MpiImpl, MpiMode, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer
from containers.versions import version

APPTAINER = RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"))
SINGULARITY = RuntimeOffer(RuntimeKind.SINGULARITY, version("3.11.4"),
                           ("/opt/singularity/bin/singularity",))
CHARLIECLOUD = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))
MPIRUN, MPIEXEC, SRUN, NONE = (LauncherKind.MPIRUN, LauncherKind.MPIEXEC, LauncherKind.SRUN,
                               LauncherKind.NONE)
HYBRID, BIND = MpiMode.HYBRID, MpiMode.BIND

JOB = "/home/scratch/gw-5f1c"
SIF = "/home/scratch/.images/sha256-9f86d0.sif"
SQFS = "/home/scratch/.images/sha256-9f86d0.sqfs"
JOB_BIND = ["--bind", f"{JOB}:{JOB}"]

MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN, SRUN),
                 command=("mpirun.mpich",), ranks_per_node_args=("-ppn", "{n}"),
                 srun_mpi="pmi2")
OPENMPI = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (MPIRUN, SRUN),
                   command=("mpirun.openmpi",), ranks_per_node_args=("--map-by", "ppr:{n}:node"),
                   srun_mpi="pmix")
CRAY = MpiOffer("cray-mpich", MpiImpl.CRAY_MPICH, version("8.1.28"), (SRUN,), srun_mpi="pmi2",
                bind_paths=("/opt/cray/pe/mpich/8.1.28", "/opt/cray/libfabric/1.15"),
                library_path=("/opt/cray/pe/mpich/8.1.28/ofi/gnu/9.1/lib",
                              "/opt/cray/libfabric/1.15/lib64"))


def run(runtime: RuntimeOffer = APPTAINER, **kw: Any) -> ContainerRun:
    base: dict[str, Any] = {"runtime": runtime, "image": SQFS if runtime is CHARLIECLOUD
                            else SIF, "command": ("./app",), "job_dir": JOB}
    return ContainerRun(**(base | kw))


CASES = [
    ("apptainer, one process, env and a read-only bind",
     run(command=("python3", "run.py", "--n", "3"), binds=(Bind("inputs", "/data", True),),
         env={"OMP_NUM_THREADS": "4", "GREETING": "a b,c=d 'q' $HOME"}),
     Launcher(), "sge",
     ["env", "APPTAINERENV_OMP_NUM_THREADS=4", "APPTAINERENV_GREETING=a b,c=d 'q' $HOME",
      "apptainer", "exec", "--containall", "--no-eval", *JOB_BIND,
      "--bind", f"{JOB}/inputs:/data:ro", "--pwd", JOB, SIF, "python3", "run.py", "--n", "3"]),
    ("apptainer, hybrid, srun --mpi=pmix (Open MPI)",
     run(mode=HYBRID), Launcher.of(OPENMPI, SRUN, 8), "slurm",
     ["srun", "--mpi=pmix", "apptainer", "exec", "--no-home", "--no-eval", *JOB_BIND,
      "--pwd", JOB, SIF, "./app"]),
    ("apptainer, hybrid, srun --mpi=pmi2 (MPICH), 2 threads per rank",
     run(mode=HYBRID), Launcher.of(MPICH, SRUN, 8, threads_per_rank=2), "slurm",
     ["srun", "--mpi=pmi2", "--cpus-per-task=2", "apptainer", "exec", "--no-home",
      "--no-eval", *JOB_BIND, "--pwd", JOB, SIF, "./app"]),
    ("apptainer, hybrid, the site's mpirun with ranks per node",
     run(mode=HYBRID, command=("./app", "-x", "1")),
     Launcher.of(MPICH, MPIRUN, 8, ranks_per_node=4), "sge",
     ["mpirun.mpich", "-n", "8", "-ppn", "4", "apptainer", "exec", "--no-home", "--no-eval",
      *JOB_BIND, "--pwd", JOB, SIF, "./app", "-x", "1"]),
    ("apptainer, hybrid, Open MPI's mpirun places ranks with --map-by",
     run(mode=HYBRID), Launcher.of(OPENMPI, MPIRUN, 4, ranks_per_node=2), "pbs",
     ["mpirun.openmpi", "-n", "4", "--map-by", "ppr:2:node", "apptainer", "exec", "--no-home",
      "--no-eval", *JOB_BIND, "--pwd", JOB, SIF, "./app"]),
    ("singularity, hybrid, plain mpiexec, env with the singularity prefix",
     run(SINGULARITY, mode=HYBRID, env={"X": "1"}), Launcher(MPIEXEC, ranks=4), "lsf",
     ["mpiexec", "-n", "4", "env", "SINGULARITYENV_X=1", "/opt/singularity/bin/singularity",
      "exec", "--no-home", "--no-eval", *JOB_BIND, "--pwd", JOB, SIF, "./app"]),
    ("apptainer, bind mode: the site's Cray MPICH bound read-only, its libraries first, GPUs",
     run(mode=BIND, site_mpi=CRAY, gpus=True, env={"LD_LIBRARY_PATH": "/app/lib"}),
     Launcher.of(CRAY, SRUN, 16), "slurm",
     ["srun", "--mpi=pmi2", "env",
      "APPTAINERENV_LD_LIBRARY_PATH=/opt/cray/pe/mpich/8.1.28/ofi/gnu/9.1/lib:"
      "/opt/cray/libfabric/1.15/lib64:/app/lib",
      "apptainer", "exec", "--no-home", "--no-eval", "--nv", *JOB_BIND,
      "--bind", "/opt/cray/pe/mpich/8.1.28:/opt/cray/pe/mpich/8.1.28:ro",
      "--bind", "/opt/cray/libfabric/1.15:/opt/cray/libfabric/1.15:ro",
      "--pwd", JOB, SIF, "./app"]),
    ("apptainer, a bind from a shared area the site allows",
     run(binds=(Bind("/shared/ref/hg38", "/ref", True),), bind_prefixes=("/shared/ref",)),
     Launcher(), "slurm",
     ["apptainer", "exec", "--containall", "--no-eval", *JOB_BIND,
      "--bind", "/shared/ref/hg38:/ref:ro", "--pwd", JOB, SIF, "./app"]),
    ("charliecloud, one process: job dir at /mnt/0, values quoted for --set-env",
     run(CHARLIECLOUD, command=("python3", "run.py"), binds=(Bind("inputs", "/mnt/1"),),
         env={"GREETING": "it's $HOME", "EMPTY": "", "QUOTED": "'q'"}),
     Launcher(), "sge",
     ["ch-run", "-b", f"{JOB}:/mnt/0", "-b", f"{JOB}/inputs:/mnt/1", "-c", "/mnt/0",
      "--env-no-expand", "--set-env=GREETING='it's $HOME'", "--set-env=EMPTY=''",
      "--set-env=QUOTED=''q''", SQFS, "--", "python3", "run.py"]),
    ("charliecloud, hybrid, Open MPI's mpirun: one container per node (--join)",
     run(CHARLIECLOUD, mode=HYBRID, join_tag="gw-5f1c"),
     Launcher.of(OPENMPI, MPIRUN, 8, ranks_per_node=4), "sge",
     ["mpirun.openmpi", "-n", "8", "--map-by", "ppr:4:node", "ch-run", "--join-ct", "4",
      "--join-tag", "gw-5f1c", "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", SQFS, "--", "./app"]),
    ("charliecloud, hybrid, srun --mpi=pmi2",
     run(CHARLIECLOUD, mode=HYBRID, join_tag="gw-5f1c.2"),
     Launcher.of(MPICH, SRUN, 4, ranks_per_node=2), "slurm",
     ["srun", "--mpi=pmi2", "ch-run", "--join-ct", "2", "--join-tag", "gw-5f1c.2",
      "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", SQFS, "--", "./app"]),
    ("charliecloud, the image's environment (bare --set-env), then the job's, which wins",
     run(CHARLIECLOUD, image_environment=True, env={"PATH": "/opt/app/bin:/usr/bin"}),
     Launcher(), "slurm",
     ["ch-run", "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", "--env-no-expand", "--set-env",
      "--set-env=PATH='/opt/app/bin:/usr/bin'", SQFS, "--", "./app"]),
    ("charliecloud, the image's environment alone",
     run(CHARLIECLOUD, image_environment=True), Launcher(), "slurm",
     ["ch-run", "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", "--env-no-expand", "--set-env",
      SQFS, "--", "./app"]),
    ("apptainer, a working directory of the job's own (a bind's destination)",
     run(binds=(Bind("tes/data", "/data"),), cwd="/data"), Launcher(), "slurm",
     ["apptainer", "exec", "--containall", "--no-eval", *JOB_BIND, "--bind",
      f"{JOB}/tes/data:/data", "--pwd", "/data", SIF, "./app"]),
    ("charliecloud, a working directory of the job's own",
     run(CHARLIECLOUD, binds=(Bind("tes/data", "/data"),), cwd="/data"), Launcher(), "local",
     ["ch-run", "-b", f"{JOB}:/mnt/0", "-b", f"{JOB}/tes/data:/data", "-c", "/data", SQFS,
      "--", "./app"]),
    ("apptainer, stdin and stdout from and to files in the container: paths are data",
     run(command=("./app", "-v"), redirects=Redirects(stdin="/data/in $x", stdout="/data/o")),
     Launcher(), "slurm",
     ["apptainer", "exec", "--containall", "--no-eval", *JOB_BIND, "--pwd", JOB, SIF,
      "/bin/sh", "-c", 'i=$1 o=$2 e=$3; shift 3; exec "$@" <"$i" >"$o"', "gridgate-redirect",
      "/data/in $x", "/data/o", "", "./app", "-v"]),
    ("charliecloud, stderr alone to a file",
     run(CHARLIECLOUD, redirects=Redirects(stderr="/data/err")), Launcher(), "local",
     ["ch-run", "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", SQFS, "--", "/bin/sh", "-c",
      'i=$1 o=$2 e=$3; shift 3; exec "$@" 2>"$e"', "gridgate-redirect", "", "", "/data/err",
      "./app"]),
    ("charliecloud, writable image unpacked in the job directory",
     run(CHARLIECLOUD, image=f"{JOB}/image", writable=True), Launcher(), "local",
     ["ch-run", "-w", "-b", f"{JOB}:/mnt/0", "-c", "/mnt/0", f"{JOB}/image", "--", "./app"]),
]


@pytest.mark.parametrize(("spec", "launcher", "scheduler", "argv"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_launch_lines(spec: ContainerRun, launcher: Launcher, scheduler: str,
                      argv: list[str]) -> None:
    assert launch_argv(spec, launcher, scheduler) == argv
    # The batch-script line reads back, word for word, as the same argv.
    assert shlex.split(shell_line(argv)) == argv


REFUSED = [
    ("srun off Slurm", run(mode=HYBRID), Launcher.of(MPICH, SRUN, 4), "sge",
     "srun needs a Slurm site (this one runs sge)"),
    ("srun without a plugin", run(mode=HYBRID), Launcher(SRUN, 4), "slurm",
     "srun needs the site's MPI plugin"),
    ("mode none with a launcher", run(), Launcher(MPIRUN, 4), "sge",
     "MPI mode none runs one process without a launcher"),
    ("hybrid without a launcher", run(mode=HYBRID), Launcher(), "sge",
     "hybrid and bind need one"),
    ("ranks without a launcher", run(), Launcher(NONE, ranks=4), "sge",
     "4 ranks need a launcher"),
    ("zero ranks", run(mode=HYBRID), Launcher(MPIRUN, ranks=0), "sge", "at least 1"),
    ("zero ranks per node", run(mode=HYBRID), Launcher(MPIRUN, 2, 0), "sge", "at least 1"),
    ("bind mode without site bind paths", run(mode=BIND, site_mpi=MPICH),
     Launcher.of(MPICH, MPIRUN, 2), "sge", "bind mode needs the site's MPI bind paths"),
    ("bind mode without a site MPI", run(mode=BIND), Launcher(MPIRUN, 2), "sge",
     "bind mode needs the site's MPI bind paths"),
    ("a bind onto the job directory", run(binds=(Bind("a", JOB),)), Launcher(), "sge",
     f"two binds end at '{JOB}'"),
    ("a bind onto a site MPI path", run(mode=BIND, site_mpi=CRAY,
                                        binds=(Bind("a", "/opt/cray/libfabric/1.15"),)),
     Launcher.of(CRAY, SRUN, 2), "slurm", "two binds end at '/opt/cray/libfabric/1.15'"),
    ("a bind leaving the job directory", run(binds=(Bind("../x", "/x"),)), Launcher(), "sge",
     "contains a '..' segment"),
    ("an absolute bind without shared areas", run(binds=(Bind("/etc", "/x"),)), Launcher(),
     "sge", "(this site allows none)"),
    ("a relative image path", run(image="images/a.sif"), Launcher(), "sge",
     "the image path 'images/a.sif' is not an absolute path"),
    ("an image path with a newline", run(image="/a\n.sif"), Launcher(), "sge",
     "control character"),
    ("an image path that reads as an option", run(image="-w"), Launcher(), "sge",
     "is not an absolute path"),
    ("a relative job directory", run(job_dir="scratch"), Launcher(), "sge",
     "the job directory 'scratch' is not an absolute path"),
    ("no program", run(command=()), Launcher(), "sge", "give the program"),
    ("an empty program", run(command=("",)), Launcher(), "sge", "give the program"),
    ("a NUL in an argument", run(command=("./app", "a\x00b")), Launcher(), "sge",
     "without NUL bytes"),
    ("a bad variable name", run(env={"1X": "a"}), Launcher(), "sge",
     "'1X' is not a valid environment variable name"),
    ("a name with a newline", run(env={"A\n": "a"}), Launcher(), "sge",
     "is not a valid environment variable name"),
    ("a NUL in a value", run(env={"A": "a\x00"}), Launcher(), "sge",
     "the value of A contains a NUL byte"),
    ("HOME under apptainer", run(env={"HOME": "/x"}), Launcher(), "sge",
     "apptainer sets HOME itself"),
    ("a writable SIF", run(writable=True), Launcher(), "sge", "runs SIF images read-only"),
    ("charliecloud in bind mode", run(CHARLIECLOUD, mode=BIND, site_mpi=CRAY, join_tag="t"),
     Launcher.of(CRAY, SRUN, 2, 2), "slurm", "charliecloud brings host MPI into an image"),
    ("charliecloud with GPUs", run(CHARLIECLOUD, gpus=True), Launcher(), "sge",
     "ch-run has no GPU option"),
    ("charliecloud, a read-only bind", run(CHARLIECLOUD, binds=(Bind("a", "/mnt/1", True),)),
     Launcher(), "sge", "ch-run (0.31) has no read-only binds"),
    ("charliecloud MPI without ranks per node", run(CHARLIECLOUD, mode=HYBRID, join_tag="t"),
     Launcher(MPIRUN, 4), "sge", "give the ranks per node and a join tag"),
    ("charliecloud MPI without a join tag", run(CHARLIECLOUD, mode=HYBRID),
     Launcher(MPIRUN, 4, 2), "sge", "give the ranks per node and a join tag"),
    ("charliecloud, a join tag with a slash", run(CHARLIECLOUD, mode=HYBRID, join_tag="a/b"),
     Launcher(MPIRUN, 4, 2), "sge", "'a/b' is not a valid job tag"),
    ("charliecloud, uneven ranks", run(CHARLIECLOUD, mode=HYBRID, join_tag="t"),
     Launcher(MPIRUN, 5, 2), "sge", "5 ranks do not fill nodes of 2"),
    ("charliecloud -w on a cached image", run(CHARLIECLOUD, writable=True), Launcher(), "sge",
     "never a shared cached one"),
    ("a relative working directory", run(cwd="data"), Launcher(), "sge",
     "the working directory 'data' is not an absolute path"),
    ("stream files for MPI ranks",
     run(mode=HYBRID, redirects=Redirects(stdout="/data/o")),
     Launcher.of(MPICH, MPIRUN, 4, ranks_per_node=4), "sge",
     "stdin, stdout and stderr files are for one process"),
]


@pytest.mark.parametrize(("spec", "launcher", "scheduler", "message"),
                         [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refusals(spec: ContainerRun, launcher: Launcher, scheduler: str, message: str
                  ) -> None:
    with pytest.raises(InvalidLaunch) as caught:
        launch_argv(spec, launcher, scheduler)
    assert message in str(caught.value)
    assert isinstance(caught.value, ContainerError)


def test_launcher_of_takes_the_site_flavours_words() -> None:
    assert Launcher.of(MPICH, MPIRUN, 8, 4) == Launcher(
        MPIRUN, 8, 4, command=("mpirun.mpich",), ranks_per_node_args=("-ppn", "{n}"))
    assert Launcher.of(OPENMPI, SRUN, 8) == Launcher(SRUN, 8, srun_mpi="pmix")
    # mpiexec is not the flavour's own launcher here: its plain name, no site words.
    both = MpiOffer("mpich", MpiImpl.MPICH, version("4.0"), (MPIRUN, MPIEXEC),
                    command=("mpirun.mpich",), ranks_per_node_args=("-ppn", "{n}"))
    assert launcher_argv(Launcher.of(both, MPIEXEC, 2, 1), "sge") == ["mpiexec", "-n", "2"]
    with pytest.raises(InvalidLaunch, match="'cray-mpich' is not started with mpirun"):
        Launcher.of(CRAY, MPIRUN, 2)


def test_the_container_part_alone_is_what_each_rank_runs() -> None:
    spec = run(mode=HYBRID)
    assert container_argv(spec, Launcher(MPIRUN, 2)) == [
        "apptainer", "exec", "--no-home", "--no-eval", *JOB_BIND, "--pwd", JOB, SIF, "./app"]


def test_shell_line_quotes_every_word_as_data() -> None:
    argv = ["srun", "--mpi=pmix", "env", "APPTAINERENV_G=a b'c", "apptainer", "exec", "x y"]
    assert shell_line(argv) == (
        "srun --mpi=pmix env 'APPTAINERENV_G=a b'\"'\"'c' apptainer exec 'x y'")
    nasty = ["./app", "$(reboot)", "`id`", "a;b", "a\nb", "*", "~", "", "--x=$HOME", "'\""]
    assert shlex.split(shell_line(nasty)) == nasty
    with pytest.raises(InvalidLaunch, match="the argv is empty"):
        shell_line([])
    with pytest.raises(InvalidLaunch, match="NUL byte"):
        shell_line(["a\x00"])
