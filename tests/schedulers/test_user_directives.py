"""Directives in a user's script (`#SBATCH`, `#$`, `#PBS`, `#BSUB`) cannot pick the job's
account, QOS, reservation, partition, identity or output, on any scheduler.

Pure builders, checked on the argv and batch script they produce; `ReplayTransport`
records what `BatchAdapter.submit` stores and runs. Which lines each scheduler reads as
directives and that its command line wins over them: sbatch(1), sge_submit(1), POSIX
qsub (PBS) and bsub(1).
"""

from __future__ import annotations

import pytest

from adapters.base import Resources, SubmitRequest
from adapters.batch.adapter import BatchAdapter
from adapters.batch.types import DialectConfig, JobLayout, SchedulerDialect
from adapters.errors import SubmitRejected
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from tests.schedulers.recorded import OK, ReplayTransport, load

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000009"
WORKDIR = f"/scratch/gw/{TAG}"
LAYOUT = JobLayout.of(WORKDIR)
CONFIG = DialectConfig(default_queue="batch", default_account="gw")


def dialects() -> dict[str, SchedulerDialect]:
    return {"slurm": SlurmDialect(CONFIG), "sge": SgeDialect(CONFIG),
            "pbs": PbsDialect(CONFIG), "lsf": LsfDialect(CONFIG)}


def request(script: str | None = None, **changes: object) -> SubmitRequest:
    base: dict[str, object] = {
        "tag": TAG, "workdir": WORKDIR, "resources": Resources(walltime_seconds=600),
        "partition": "long", "account": "proj7",
        **({"script": script} if script is not None else {"argv": ["hostname"]}),
    }
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


# Lines that would change who is charged, where or as whom the job runs, or where its
# output goes, per scheduler (each dialect's manual page names these options).
HOSTILE = {
    "slurm": ["#SBATCH --account=other", "#SBATCH -A other", "#SBATCH --acc=other",
              "#SBATCH --qos=high", "#SBATCH --reservation=maint", "#SBATCH -p big",
              "#SBATCH --partition=big", "#SBATCH --uid=0", "#SBATCH --gid=wheel",
              "#SBATCH --export=ALL,LD_PRELOAD=/tmp/x.so", "#SBATCH --job-name=other",
              "#SBATCH -o /home/other/out", "#SBATCH --time=999-00:00:00",
              "#SBATCH --gres=gpu:8", "#SBATCH --mail-type=END --account=other",
              "#SBATCH --mail-user=-A", "#SBATCH --mail-type='END' ", "#SBATCH--account=x"],
    "sge": ["#$ -P proj", "#$ -A other", "#$ -q big.q", "#$ -l h_rt=99999999", "#$ -N other",
            "#$ -o /tmp/x", "#$ -V", "#$ -v LD_PRELOAD=/tmp/x.so", "#$ -M -A", "#$ -C #X"],
    "pbs": ["#PBS -A other", "#PBS -q big", "#PBS -W group_list=wheel", "#PBS -u root",
            "#PBS -l walltime=999:00:00", "#PBS -V", "#PBS -v X=1", "#PBS -N other",
            "#PBS -o host:/x", "#PBS -P proj", "#PBS -m abe \\"],
    "lsf": ["#BSUB -P proj", "#BSUB -G grp", "#BSUB -q big", "#BSUB -U resv", "#BSUB -app p",
            "#BSUB -sla gold", "#BSUB -J other", "#BSUB -o /x", "#BSUB -env all",
            "#BSUB -u -P", "#BSUB -B -P proj"],
}
CASES = [(kind, line) for kind, lines in HOSTILE.items() for line in lines]


@pytest.mark.parametrize(("kind", "line"), CASES)
def test_a_hostile_directive_is_refused_naming_its_line(kind: str, line: str) -> None:
    script = f"#!/bin/sh\n# my job\n{line}\nhostname\n"
    with pytest.raises(SubmitRejected) as info:
        dialects()[kind].submit_command(request(script), LAYOUT)
    assert f"script line 3 {line.strip()!r}" in info.value.message


@pytest.mark.parametrize("kind", HOSTILE)
def test_refused_before_anything_touches_the_site(kind: str) -> None:
    t = ReplayTransport()
    adapter = BatchAdapter(t, dialects()[kind])
    with pytest.raises(SubmitRejected, match="script line 2"):
        adapter.submit(request(f"#!/bin/sh\n{HOSTILE[kind][0]}\nhostname\n"))
    assert t.calls == [] and t.files == {}


@pytest.mark.parametrize(("kind", "read_after_commands"),
                         [("slurm", False), ("pbs", False), ("sge", True), ("lsf", True)])
def test_directives_after_the_first_command_as_each_scheduler_reads_them(
        kind: str, read_after_commands: bool) -> None:
    line = HOSTILE[kind][0]
    script = f"#!/bin/sh\nhostname\n{line}\n"
    if read_after_commands:
        # Grid Engine and LSF read directive lines anywhere in the script.
        with pytest.raises(SubmitRejected, match="script line 3"):
            dialects()[kind].submit_command(request(script), LAYOUT)
    else:
        # sbatch and qsub stop at the first command: the line is not a directive to them,
        # and it is not copied into the batch script.
        wrapper = dialects()[kind].render_script(request(script), LAYOUT)
        assert line not in wrapper


MAIL = {
    "slurm": ("#SBATCH --mail-type END,FAIL\n#SBATCH --mail-user=ada@example.org\n",
              ["#SBATCH --mail-type=END,FAIL", "#SBATCH --mail-user=ada@example.org"]),
    "sge": ("#$ -m be\n#$   -M ada@example.org,bob\n",
            ["#$ -m be", "#$ -M ada@example.org,bob"]),
    "pbs": ("#PBS -m abe\n#PBS -M ada@example.org\n", ["#PBS -m abe", "#PBS -M ada@example.org"]),
    "lsf": ("#BSUB -B\n#BSUB -N\n#BSUB -u ada@example.org\n",
            ["#BSUB -B", "#BSUB -N", "#BSUB -u ada@example.org"]),
}


@pytest.mark.parametrize("kind", MAIL)
def test_mail_directives_pass_rewritten(kind: str) -> None:
    text, passed = MAIL[kind]
    wrapper = dialects()[kind].render_script(request(f"#!/bin/bash\n{text}hostname\n"), LAYOUT)
    lines = wrapper.splitlines()
    for line in passed:
        assert line in lines


# The options the gateway decides, as they must appear on each command line.
DECIDED = {
    "slurm": [["--partition=long"], ["--account=proj7"], [f"--job-name={TAG}"],
              [f"--comment={TAG}"], [f"--chdir={WORKDIR}"], [f"--output={WORKDIR}/stdout"],
              [f"--error={WORKDIR}/stderr"], ["--time=0-00:10:00"], ["--nodes=1"],
              ["--ntasks=1"], ["--cpus-per-task=1"]],
    "sge": [["-q", "long"], ["-A", "proj7"], ["-N", TAG], ["-wd", WORKDIR],
            ["-o", f"{WORKDIR}/stdout"], ["-e", f"{WORKDIR}/stderr"], ["-l", "h_rt=600"]],
    "pbs": [["-q", "long"], ["-A", "proj7"], ["-N", TAG], ["-o", f"{WORKDIR}/stdout"],
            ["-e", f"{WORKDIR}/stderr"], ["-l", "walltime=0:10:00"],
            ["-l", "select=1:ncpus=1:mpiprocs=1:ompthreads=1"]],
    "lsf": [["-q", "long"], ["-P", "proj7"], ["-J", TAG], ["-cwd", WORKDIR],
            ["-o", f"{WORKDIR}/stdout"], ["-e", f"{WORKDIR}/stderr"], ["-W", "10"],
            ["-n", "1"]],
}


def _has(argv: tuple[str, ...], words: list[str]) -> bool:
    return any(list(argv[i:i + len(words)]) == words for i in range(len(argv)))


@pytest.mark.parametrize("kind", DECIDED)
def test_every_decided_option_is_on_the_command_line(kind: str) -> None:
    text, passed = MAIL[kind]
    command = dialects()[kind].submit_command(request(f"#!/bin/sh\n{text}hostname\n"), LAYOUT)
    for option in DECIDED[kind]:
        assert _has(command.argv, option), option
    # Every directive in the batch script, except the user's mail ones, repeats an option
    # of the command line: nothing the gateway decides lives in the script alone.
    assert command.stdin is not None
    prefix = passed[0].split()[0]
    for line in command.stdin.decode().splitlines():
        if line.startswith(prefix + " ") and line not in passed:
            words = line.split()[1:]
            assert _has(command.argv, words), line


SUBMITTED = {"slurm": ("slurm", "real_sbatch_parsable.txt"), "sge": ("sge", "real_qsub_ok.txt"),
             "pbs": ("pbs", "qsub_ok.txt"), "lsf": ("lsf", "bsub_ok.txt")}


@pytest.mark.parametrize("kind", HOSTILE)
def test_the_stored_user_script_is_never_the_submitted_script(kind: str) -> None:
    dialect = dialects()[kind]
    text, _ = MAIL[kind]
    script = f"#!/bin/sh\n{text}hostname\n"
    t = ReplayTransport()
    submit = dialect.submit_command(request(script), LAYOUT)
    t.expect(("mkdir", "-p", "-m", "700", "--", WORKDIR, LAYOUT.control_dir), OK)
    t.expect(submit.argv, load(*SUBMITTED[kind]))
    adapter = BatchAdapter(t, dialect)
    assert adapter.submit(request(script))
    # Stored as its own file, run by the batch script...
    assert t.files[LAYOUT.user_script] == (script.encode(), 0o700)
    run = t.calls[-1]
    # ...which is what goes to the scheduler, on stdin; the stored file is not an argument.
    assert LAYOUT.user_script not in run.argv
    assert run.stdin == adapter.render_script(request(script)).encode() != script.encode()
