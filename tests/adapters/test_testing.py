"""`adapters.testing`: the replay transport adapter authors test with."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.testing import Call, Recording, ReplayMismatch, ReplayTransport
from adapters.transport import CommandTimeout

RECORDING = b"""# qsub.1B: qsub prints the new job's id
# command: qsub
# exit: 0
# --- stdout
7.server
# --- stderr
"""


def test_a_recording_file_names_its_source(tmp_path: Path) -> None:
    path = tmp_path / "qsub_ok.txt"
    path.write_bytes(RECORDING)
    recording = Recording.load(path)
    assert recording == Recording(0, b"7.server\n", b"", "qsub.1B: qsub prints the new job's id")
    path.write_bytes(RECORDING.replace(b"# qsub.1B: qsub prints the new job's id\n", b""))
    with pytest.raises(ValueError, match="no line says where this output comes from"):
        Recording.load(path)
    path.write_bytes(RECORDING.replace(b"# exit: 0\n", b""))
    with pytest.raises(ValueError, match="no '# exit:' line"):
        Recording.load(path)


def test_commands_are_answered_in_order_and_checked_exactly() -> None:
    t = ReplayTransport().expect(["qstat", "7"], Recording(0, b"R\n", b""))
    t.expect(["qdel", "7"], CommandTimeout("qdel took too long"))
    assert t.run(["qstat", "7"], timeout=5).stdout == b"R\n"
    with pytest.raises(CommandTimeout):
        t.run(["qdel", "7"])
    assert [c.argv for c in t.calls] == [("qstat", "7"), ("qdel", "7")]
    assert t.calls[0].timeout == 5
    t.assert_done()
    with pytest.raises(ReplayMismatch, match="unexpected command"):
        t.run(["qstat"])


def test_a_different_argv_fails_and_says_both() -> None:
    t = ReplayTransport().expect(["qdel", "7"])
    with pytest.raises(ReplayMismatch, match=r"ran \('qdel', '8'\)\nexpected \('qdel', '7'\)"):
        t.run(["qdel", "8"])


def test_commands_never_run_fail_the_test() -> None:
    t = ReplayTransport().expect(["qstat"])
    with pytest.raises(ReplayMismatch, match="commands never run"):
        t.assert_done()


def test_an_answer_can_check_what_the_command_read() -> None:
    def answer(call: Call) -> Recording:
        return Recording(0, b"1\n" if call.stdin == b"#!/bin/sh\n" else b"", b"")

    t = ReplayTransport().expect(["qsub"], answer).expect(["qsub"], answer)
    assert t.run(["qsub"], stdin=b"#!/bin/sh\n").stdout == b"1\n"
    assert t.run(["qsub"], stdin=b"other").stdout == b""


def test_files_are_kept_in_memory() -> None:
    t = ReplayTransport()
    assert t.read_bytes("/x") == (b"", None)
    t.put_bytes(b"hello", "/x", mode=0o700)
    assert t.read_bytes("/x", 1, 3) == (b"ell", 5)
    assert t.files["/x"] == (b"hello", 0o700)
