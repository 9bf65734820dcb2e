"""One reason vocabulary: a literal reason in an adapter's status is a type error.

The check is mypy's (run over the packages by the test command): `JobStatus.reason`, the
state tables and the local runner's outcome take `Reason` members or text built by
`adapters.reasons`, never a bare string. These tests run mypy on a small module to show a
literal sneaking back is caught, and that the gateway sees the very same vocabulary.
"""

from __future__ import annotations

import textwrap
from datetime import UTC
from pathlib import Path
from types import ModuleType

import pytest
from mypy import api

import adapters.reasons
import gateway.domain.states
from adapters.lsf import states as lsf_states
from adapters.pbs import states as pbs_states
from adapters.reasons import Reason, because
from adapters.sge import states as sge_states
from adapters.slurm import states as slurm_states
from adapters.slurm.status import row_status

ROOT = Path(__file__).resolve().parents[2]


def _mypy_errors(tmp_path: Path, source: str) -> list[int]:
    """Line numbers mypy --strict reports errors on, for `source` checked against the repo."""
    module = tmp_path / "reasons_probe.py"
    module.write_text(textwrap.dedent(source))
    out, err, _ = api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                           "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(tmp_path / "cache"), str(module)])
    assert not err, err
    lines = [line for line in out.splitlines()
             if line.startswith(str(module)) and ": error:" in line]
    return sorted(int(line.split(":")[1]) for line in lines)


def test_a_literal_reason_is_a_type_error(tmp_path: Path) -> None:
    errors = _mypy_errors(tmp_path, """\
        from adapters.base import JobStatus, NativeState
        from adapters.reasons import Reason, because, scheduler_says

        JobStatus("1", NativeState.FAILED, "F", "TIMEOUT")
        JobStatus("1", NativeState.FAILED, "F", f"killed by signal {9}")
        STATES: dict[str, tuple[NativeState, Reason | None]] = {"X": (NativeState.FAILED, "gone")}
        JobStatus("1", NativeState.FAILED, "F", Reason.TIMEOUT)
        JobStatus("1", NativeState.FAILED, "F", because(Reason.KILLED_BY_SIGNAL, 9, " "))
        JobStatus("1", NativeState.QUEUED, "PD", scheduler_says("Priority"))
        """)
    # Lines 4-6 spell a reason out; 7-9 take it from the vocabulary.
    assert errors == [4, 5, 6]


@pytest.mark.parametrize("states", [slurm_states, sge_states, pbs_states, lsf_states],
                         ids=["slurm", "sge", "pbs", "lsf"])
def test_state_tables_give_codes_from_the_vocabulary(states: ModuleType) -> None:
    """Each scheduler's state table: a `Reason` or nothing, whatever its annotation says."""
    reasons = [reason for _, reason in states.STATES.values()]
    assert [r for r in reasons if r is not None and not isinstance(r, Reason)] == []


def test_the_gateway_uses_the_adapters_vocabulary() -> None:
    assert gateway.domain.states.Reason is adapters.reasons.Reason


def test_codes_keep_the_strings_clients_match_on() -> None:
    # Stored reasons and API documents carry these strings; renaming one breaks clients.
    assert Reason.TIMEOUT == "TIMEOUT"
    assert Reason.NON_ZERO_EXIT == "NonZeroExitCode"
    assert Reason.CANCELLED_BY_USER == "cancelled by user"
    assert because(Reason.SUBMIT_REJECTED, "no such partition") == \
        "SUBMIT_REJECTED: no such partition"
    assert because(Reason.KILLED_BY_SIGNAL, 9, " ") == "killed by signal 9"


def test_scheduler_words_pass_through_and_codes_come_from_the_vocabulary() -> None:
    """Slurm's own pending reason is kept as data; a final state's reason is a code."""
    pending = row_status(["7", "PENDING", "Priority", "N/A", "job"], UTC)
    assert pending.reason == "Priority" and not isinstance(pending.reason, Reason)
    timed_out = row_status(["7", "TIMEOUT", "TimeLimit", "2024-01-01T00:00:00", "job"], UTC)
    assert timed_out.reason is Reason.TIMEOUT
