"""Grid Engine native array jobs: qsub's `-t`/`-tc`, the script's index (SGE_TASK_ID - 1),
and qstat/qacct output turned into one state per task.

Fixtures `real_qsub_array.txt`, `real_qstat_array.txt` and `real_qacct_array.txt` were
recorded from the testbed's real Grid Engine 8.1.9 (tests/live/test_array_outputs.py);
the option syntax is qsub(1)'s `-t n[-m[:s]]` and `-tc max_running_tasks`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from adapters.base import ArrayRequest, NativeState, SubmitRequest
from adapters.batch.types import JobLayout
from adapters.errors import SubmitRejected
from adapters.sge import SgeDialect
from adapters.sge.arrays import array_options, record_id, split, tasks
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-0000000000a2"
WORKDIR = f"/scratch/gw/{TAG}"


@pytest.mark.parametrize(("array", "options"), [
    (ArrayRequest(tuple(range(20)), 4), [["-t", "1-20"], ["-tc", "4"]]),
    (ArrayRequest((0, 4, 8)), [["-t", "1-9:4"]]),
    (ArrayRequest((5,)), [["-t", "6"]]),
])
def test_array_options_number_tasks_from_one(array: ArrayRequest,
                                             options: list[list[str]]) -> None:
    assert array_options(array) == options


def test_an_index_list_that_is_not_one_range_is_not_an_sge_array() -> None:
    dialect = SgeDialect()
    assert not dialect.array_fits(ArrayRequest((1, 3, 4)))
    assert dialect.array_fits(ArrayRequest((1, 3, 5)))
    with pytest.raises(SubmitRejected):
        array_options(ArrayRequest((1, 3, 4)))


def test_submit_command_and_task_ids() -> None:
    dialect = SgeDialect()
    request = SubmitRequest(tag=TAG, workdir=WORKDIR, argv=["true"],
                            array=ArrayRequest(tuple(range(20)), 4))
    argv = dialect.submit_command(request, JobLayout.of(WORKDIR)).argv
    assert argv[:2] == ("qsub", "-terse")
    joined = " ".join(argv)
    assert "-t 1-20 -tc 4" in joined and f"-o {WORKDIR}/.gridgate/" in joined
    assert dialect.task_id("7", 3) == "7.4"
    assert split("7.4") == ("7", "4") and split("7") == ("7", None)
    assert dialect.cancel_command("7.4") == ("qdel", "7", "-t", "4")
    assert dialect.cancel_command("7") == ("qdel", "7")


def test_script_turns_sge_task_id_into_the_gateway_index(tmp_path: Path) -> None:
    request = SubmitRequest(tag=TAG, workdir=str(tmp_path), argv=["sh", "-c",
                            'echo "$GRIDGATE_ARRAY_TASK_ID $GRIDGATE_JOB_TAG"'],
                            array=ArrayRequest((0, 1, 2)))
    script = SgeDialect().render_script(request, JobLayout.of(str(tmp_path)))
    subprocess.run(["sh", "-c", script], check=True, cwd=str(tmp_path),
                   env={"SGE_TASK_ID": "3", "PATH": "/usr/bin:/bin"})
    assert (tmp_path / "2" / "stdout").read_text() == f"2 {TAG}_2\n"


def test_qsub_terse_of_an_array_gives_the_job_id() -> None:
    assert SgeDialect().parse_submit(result("sge", "real_qsub_array.txt")) == "1"


def test_tasks_unfold() -> None:
    assert tasks("3-6:1") == [3, 4, 5, 6]
    assert tasks("1,3-7:2") == [1, 3, 5, 7]
    assert tasks("") == [] and tasks("x") == []
    assert record_id({"jobnumber": "9", "taskid": "undefined"}) == "9"
    assert record_id({"jobnumber": "9", "taskid": "2"}) == "9.2"


def test_real_qstat_gives_every_task_a_state() -> None:
    ids = [f"1.{t}" for t in range(1, 7)]
    found = SgeDialect().parse_status(result("sge", "real_qstat_array.txt"), ids)
    assert {i: s.state for i, s in found.items()} == {
        "1.1": NativeState.RUNNING, "1.2": NativeState.RUNNING,
        "1.3": NativeState.QUEUED, "1.4": NativeState.QUEUED,
        "1.5": NativeState.QUEUED, "1.6": NativeState.QUEUED}


def test_real_qacct_gives_every_task_its_end_and_usage() -> None:
    dialect = SgeDialect()
    assert dialect.accounting_commands(["1.1", "1.2", "1.6"]) == [("qacct", "-m", "-j", "1")]
    found = dialect.parse_accounting(result("sge", "real_qacct_array.txt"))
    assert sorted(found) == [f"1.{t}" for t in range(1, 7)]
    assert all(s.state is NativeState.COMPLETED and s.exit_code == 0 for s in found.values())
    usage = dialect.parse_usage(result("sge", "real_qacct_array.txt"))
    assert sorted(r.native_id for r in usage) == [f"1.{t}" for t in range(1, 7)]


def test_find_array_by_name() -> None:
    dialect = SgeDialect()
    listing = result("sge", "real_qstat_array.txt", ("qstat", "-xml", "-u", "*"))
    assert dialect.parse_find_array(listing, "gw-rec-array") == "1"
    assert dialect.parse_find_array(listing, "gw-other") is None
