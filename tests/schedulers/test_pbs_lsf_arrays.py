"""PBS Professional and LSF native job arrays, on recorded outputs derived from their
documentation (neither scheduler can be installed here; each fixture's header says
where its format comes from): the submit options (`-J 0-19%4`; `-J "tag[1-20]%4"`),
the index each task computes (PBS_ARRAY_INDEX; LSB_JOBINDEX - 1), subjob/element ids
(`120[3].pbsserver`; `3001[4]`) and their states."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.base import ArrayRequest, NativeState, SubmitRequest
from adapters.batch.types import JobLayout
from adapters.errors import SubmitRejected
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from tests.schedulers.recorded import result

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-0000000000a3"
LSF_TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-0000000000a4"
WORKDIR = f"/scratch/gw/{TAG}"
NOW = datetime(2025, 11, 22, 3, 0, tzinfo=UTC)


def array_request(tag: str, array: ArrayRequest) -> SubmitRequest:
    return SubmitRequest(tag=tag, workdir=WORKDIR, argv=["true"], array=array)


# --- PBS --------------------------------------------------------------------------------

def test_pbs_submits_one_range_with_its_throttle() -> None:
    dialect = PbsDialect()
    argv = dialect.submit_command(array_request(TAG, ArrayRequest(tuple(range(20)), 4)),
                                  JobLayout.of(WORKDIR)).argv
    joined = " ".join(argv)
    assert "-J 0-19%4" in joined and f"-o {WORKDIR}/.gridgate/" in joined
    argv = dialect.submit_command(array_request(TAG, ArrayRequest((0, 2, 4))),
                                  JobLayout.of(WORKDIR)).argv
    assert "-J 0-4:2" in " ".join(argv)


def test_pbs_arrays_it_cannot_express_go_task_by_task() -> None:
    dialect = PbsDialect()
    assert dialect.array_fits(ArrayRequest((0, 1, 2)))
    assert not dialect.array_fits(ArrayRequest((0, 1, 5)))  # not one range
    assert not dialect.array_fits(ArrayRequest((7,)))  # one subjob
    torque = PbsDialect(torque=True)
    assert not torque.capabilities.arrays and not torque.array_fits(ArrayRequest((0, 1)))
    with pytest.raises(SubmitRejected):
        torque.submit_command(array_request(TAG, ArrayRequest((0, 1))), JobLayout.of(WORKDIR))


def test_pbs_subjob_ids_and_states() -> None:
    dialect = PbsDialect()
    array_id = dialect.parse_submit(result("pbs", "qsub_array.txt"))
    assert array_id == "120[].pbsserver"
    ids = [dialect.task_id(array_id, i) for i in range(4)]
    assert ids == [f"120[{i}].pbsserver" for i in range(4)]
    assert dialect.cancel_command(ids[3]) == ("qdel", "120[3].pbsserver")
    found = dialect.parse_status(result("pbs", "qstat_subjobs.txt"), ids)
    assert {i: (s.state, s.exit_code) for i, s in found.items()} == {
        ids[0]: (NativeState.COMPLETED, 0), ids[1]: (NativeState.FAILED, 3),
        ids[2]: (NativeState.RUNNING, None), ids[3]: (NativeState.QUEUED, None)}
    assert "concurrent running subjobs" in str(found[ids[3]].reason)


def test_pbs_script_reads_pbs_array_index(tmp_path: Path) -> None:
    request = SubmitRequest(tag=TAG, workdir=str(tmp_path), argv=["sh", "-c",
                            'echo "$GRIDGATE_ARRAY_TASK_ID"'], array=ArrayRequest((0, 5, 10)))
    script = PbsDialect().render_script(request, JobLayout.of(str(tmp_path)))
    subprocess.run(["sh", "-c", script], check=True,
                   env={"PBS_ARRAY_INDEX": "5", "PATH": "/usr/bin:/bin"})
    assert (tmp_path / "5" / "stdout").read_text() == "5\n"


# --- LSF --------------------------------------------------------------------------------

def lsf() -> LsfDialect:
    return LsfDialect(clock=lambda: NOW)


def test_lsf_names_the_array_with_indices_from_one_and_its_limit() -> None:
    argv = lsf().submit_command(array_request(LSF_TAG, ArrayRequest(tuple(range(20)), 4)),
                                JobLayout.of(WORKDIR)).argv
    assert argv[argv.index("-J") + 1] == f"{LSF_TAG}[1-20]%4"
    assert f"{WORKDIR}/.gridgate/task-%I.out" in argv
    argv = lsf().submit_command(array_request(LSF_TAG, ArrayRequest((1, 3, 5, 6, 7))),
                                JobLayout.of(WORKDIR)).argv
    assert argv[argv.index("-J") + 1] == f"{LSF_TAG}[2-6:2,7-8]"


def test_lsf_element_ids_and_states() -> None:
    dialect = lsf()
    ids = [dialect.task_id("3001", i) for i in range(4)]
    assert ids == ["3001[1]", "3001[2]", "3001[3]", "3001[4]"]
    assert dialect.cancel_command("3001[3]") == ("bkill", "3001[3]")
    found = dialect.parse_status(result("lsf", "bjobs_array.txt"), ids)
    assert {i: (s.state, s.exit_code) for i, s in found.items()} == {
        "3001[1]": (NativeState.COMPLETED, 0), "3001[2]": (NativeState.RUNNING, None),
        "3001[3]": (NativeState.QUEUED, None), "3001[4]": (NativeState.FAILED, 3)}
    assert "running element limit" in str(found["3001[3]"].reason)
    listing = result("lsf", "bjobs_array.txt", ("bjobs",))
    assert dialect.parse_find_array(listing, LSF_TAG) == "3001"
    assert dialect.parse_find_array(listing, "gw-other") is None


def test_lsf_script_reads_lsb_jobindex(tmp_path: Path) -> None:
    request = SubmitRequest(tag=LSF_TAG, workdir=str(tmp_path), argv=["sh", "-c",
                            'echo "$GRIDGATE_ARRAY_TASK_ID"'], array=ArrayRequest((0, 1, 2)))
    script = lsf().render_script(request, JobLayout.of(str(tmp_path)))
    subprocess.run(["sh", "-c", script], check=True,
                   env={"LSB_JOBINDEX": "1", "PATH": "/usr/bin:/bin"})
    assert (tmp_path / "0" / "stdout").read_text() == "0\n"


def test_lsf_usage_of_array_elements_from_lsb_acct() -> None:
    """An element's JOB_FINISH record is its array job's, with idx (lsb.acct(5))."""
    from adapters.lsf.commands import LsfCommands
    from adapters.lsf.usage import parse_usage, usage_command

    argv = usage_command(LsfCommands(), ["3001[1]", "3001[4]", "77"], "/logdir")
    assert argv is not None and '^"JOB_FINISH" "[^"]*" [0-9]+ (3001|77) ' in argv
    records = parse_usage(result("lsf", "lsb_acct_array.txt"))
    assert [(r.native_id, r.state, r.exit_code) for r in records] == [
        ("3001[1]", NativeState.COMPLETED, 0), ("3001[4]", NativeState.FAILED, 3)]
