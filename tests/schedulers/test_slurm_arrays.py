"""Slurm native job arrays: the sbatch options, the batch script, and squeue/sacct
output unfolded into one state per task.

Fixtures: `real_squeue_array.txt` and `real_sacct_array.txt` were recorded from the
testbed's real Slurm 22.05.8 (tests/live/test_array_outputs.py); the folded forms with
lists and steps follow sbatch(1) `--array` and https://slurm.schedmd.com/job_array.html
("squeue ... 123_[4-19%4]"), whose syntax squeue and sacct print back.
"""

from __future__ import annotations

import subprocess
from datetime import UTC
from pathlib import Path

import pytest

from adapters.base import ArrayRequest, NativeState, SubmitRequest
from adapters.batch.arrays import runs
from adapters.batch.types import JobLayout
from adapters.errors import AdapterError, SubmitRejected
from adapters.slurm import SlurmDialect
from adapters.slurm.arrays import array_option, base_id, status_ids, task_index, unfold
from adapters.testing import OK
from adapters.transport import CommandResult
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-0000000000a1"
WORKDIR = f"/scratch/gw/{TAG}"


def array_request(indices: tuple[int, ...], throttle: int | None = None) -> SubmitRequest:
    return SubmitRequest(tag=TAG, workdir=WORKDIR, argv=["echo", "task; $(reboot)"],
                         array=ArrayRequest(indices, throttle))


@pytest.mark.parametrize(("indices", "expected"), [
    ((0,), [(0, 0, 1)]),
    (tuple(range(20)), [(0, 19, 1)]),
    ((0, 4, 8, 12), [(0, 12, 4)]),
    ((1, 3, 5, 6, 7, 8, 9), [(1, 5, 2), (6, 9, 1)]),
    ((1, 7, 8, 9), [(1, 1, 1), (7, 9, 1)]),
    ((2, 9), [(2, 9, 7)]),
])
def test_runs_cover_exactly_the_indices(indices: tuple[int, ...],
                                        expected: list[tuple[int, int, int]]) -> None:
    found = runs(indices)
    assert found == expected
    assert sorted(i for a, b, s in found for i in range(a, b + 1, s)) == sorted(indices)


@pytest.mark.parametrize(("array", "option"), [
    (ArrayRequest(tuple(range(20)), 4), "--array=0-19%4"),
    (ArrayRequest(tuple(range(1000))), "--array=0-999"),
    (ArrayRequest((1, 3, 5, 6, 7, 8, 9), 2), "--array=1-5:2,6-9%2"),
])
def test_array_option(array: ArrayRequest, option: str) -> None:
    assert array_option(array) == option


def test_array_option_refuses_an_empty_array() -> None:
    with pytest.raises(SubmitRejected):
        array_option(ArrayRequest(()))


def test_submit_command_is_one_sbatch_with_the_array_and_per_task_output() -> None:
    command = SlurmDialect().submit_command(array_request(tuple(range(20)), 4),
                                            JobLayout.of(WORKDIR))
    assert command.argv[:2] == ("sbatch", "--parsable")
    assert "--array=0-19%4" in command.argv
    assert f"--output={WORKDIR}/.gridgate/task-%a.out" in command.argv
    assert f"--job-name={TAG}" in command.argv


def test_script_gives_each_task_its_index_directory_and_output(tmp_path: Path) -> None:
    """The rendered script, run by a real sh as tasks 3 and 7 would be: each finds its
    index in GRIDGATE_ARRAY_TASK_ID, runs in its own directory with its own stdout, and
    the user's words stay data."""
    base = tmp_path / "array"
    base.mkdir()
    request = SubmitRequest(tag=TAG, workdir=str(base),
                            argv=["sh", "-c", 'echo "$GRIDGATE_ARRAY_TASK_ID $PWD $0"',
                                  "$(touch pwned)"],
                            array=ArrayRequest(tuple(range(10)), 2))
    script = SlurmDialect().render_script(request, JobLayout.of(str(base)))
    for index in (3, 7):
        subprocess.run(["sh", "-c", script], check=True, cwd=str(base),
                       env={"SLURM_ARRAY_TASK_ID": str(index), "PATH": "/usr/bin:/bin"})
        said = (base / str(index) / "stdout").read_text().split()
        assert said == [str(index), str(base / str(index)), "$(touch", "pwned)"]
    assert not (base / "pwned").exists() and not (base / "3" / "pwned").exists()


def test_unfold_folded_pending_tasks() -> None:
    assert unfold("123_[4-7%4]") == ["123_4", "123_5", "123_6", "123_7"]
    assert unfold("123_[1,3-7:2]") == ["123_1", "123_3", "123_5", "123_7"]
    assert unfold("123_3") == ["123_3"]
    assert unfold("123") == ["123"]
    assert unfold("123_[7-4]") == ["123_[7-4]"]  # nonsense is left as it is
    assert base_id("123_[4-7%4]") == "123" and base_id("123_3") == "123"
    assert task_index("123_3") == 3 and task_index("123") is None


def test_status_asks_squeue_about_the_array_once() -> None:
    dialect = SlurmDialect()
    argv = dialect.status_command(["1_0", "1_5", "1_2", "9"])
    assert "--jobs=1,9" in argv
    assert status_ids(["1_0", "1_1"]) == ["1"]


def test_real_squeue_of_a_throttled_array_gives_every_task_a_state() -> None:
    ids = [f"1_{i}" for i in range(6)]
    found = SlurmDialect().parse_status(result("slurm", "real_squeue_array.txt"), ids)
    assert {i: s.state for i, s in found.items()} == {
        "1_0": NativeState.RUNNING, "1_1": NativeState.RUNNING,
        "1_2": NativeState.QUEUED, "1_3": NativeState.QUEUED,
        "1_4": NativeState.QUEUED, "1_5": NativeState.QUEUED}
    assert "JobArrayTaskLimit" in str(found["1_4"].reason)


def test_real_sacct_of_an_ended_array_gives_every_task_its_end() -> None:
    found = SlurmDialect().parse_accounting(result("slurm", "real_sacct_array.txt"))
    assert sorted(found) == [f"1_{i}" for i in range(6)]
    assert all(s.state is NativeState.COMPLETED and s.exit_code == 0 for s in found.values())
    assert found["1_5"].started_at is not None
    assert found["1_5"].started_at.tzinfo is UTC


def test_find_array_by_tag_takes_the_array_job_id() -> None:
    dialect = SlurmDialect()
    tag = TAG.encode()
    listing = CommandResult(("squeue",), 0,
                            b"41_[2-5%2]|PENDING|JobArrayTaskLimit|N/A|" + tag + b"\n"
                            b"41_1|RUNNING|None|1795320557|" + tag + b"\n"
                            b"40|RUNNING|None|1795320557|gw-other\n", b"")
    assert dialect.parse_find_array(listing, TAG) == "41"
    assert dialect.parse_find_array(OK.result(("squeue",)), TAG) is None
    assert dialect.task_id("41", 3) == "41_3"


def test_find_array_raises_on_a_failed_query() -> None:
    with pytest.raises(AdapterError):
        SlurmDialect().parse_find_array(CommandResult(("squeue",), 1, b"", b"boom"), TAG)


def test_indices_must_stay_below_max_array_size() -> None:
    """slurm.conf(5): the highest task index is MaxArraySize - 1 (default 1001)."""
    assert SlurmDialect().array_fits(ArrayRequest(tuple(range(1000))))
    assert not SlurmDialect().array_fits(ArrayRequest((5, 1001)))
    assert SlurmDialect(max_array_size=10001).array_fits(ArrayRequest((5, 1001)))
    assert not SlurmDialect().array_fits(ArrayRequest(()))
