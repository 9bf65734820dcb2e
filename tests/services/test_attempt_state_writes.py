"""An attempt's state is written in one place, gateway.services.lifecycle.transitions
(new_attempt, move_attempt, end_attempt), which records each change as an event
(org.gridgate.attempt.state) in the same unit of work: a new writer elsewhere would
change states no reader of the event log hears of."""

from __future__ import annotations

import re
from pathlib import Path

import gateway

ROOT = Path(gateway.__file__).parent
HELPER = ROOT / "services" / "lifecycle" / "transitions.py"
# `attempt.state = ...`, `state=AttemptState.X` (a new row, an UPDATE's values), and an
# UPDATE of attempts whose values name the state.
ASSIGNED = re.compile(r"\battempt\w*\.state\s*=(?!=)")
KEYWORD = re.compile(r"\bstate\s*=\s*AttemptState\b")
BULK = re.compile(r"update\(\s*(?:Attempt|_attempts)\b[^)]*\)(?:(?!\bupdate\().){0,400}?"
                  r"\.values\([^)]*\bstate\b", re.DOTALL)


def writes(text: str) -> list[str]:
    return [m.group(0) for pattern in (ASSIGNED, KEYWORD, BULK)
            for m in pattern.finditer(text)]


def test_only_the_lifecycle_helpers_write_an_attempts_state() -> None:
    found = {str(path.relative_to(ROOT)): writes(path.read_text())
             for path in ROOT.rglob("*.py") if path != HELPER}
    assert {path: hits for path, hits in found.items() if hits} == {}


def test_the_patterns_find_the_writes_they_look_for() -> None:
    assert writes(HELPER.read_text())  # the helpers' own writes
    assert writes("x = Attempt(job_id=j, state=AttemptState.QUEUED)")
    assert writes("session.execute(update(Attempt).where(Attempt.id == i)\n"
                  "                .values(state='RUNNING'))")
    assert not writes("if attempt.state == AttemptState.RUNNING: pass")
    assert not writes("session.execute(update(Attempt).values(lease_until=None))")
