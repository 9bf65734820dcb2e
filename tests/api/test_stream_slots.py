"""Stream slots (gateway.api.http.stream_slots): one user's cap holds across real
processes of one host, and finding a free slot does not retry the slots this process
already holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.api.http.stream_slots import SlotRefused, StreamSlot, StreamSlots

ROOT = Path(__file__).resolve().parents[2]
# A second server process: takes up to `count` of alice's slots, says how many it got,
# and holds them until its stdin closes.
HOLDER = """
import sys
from pathlib import Path
from gateway.api.http.stream_slots import SlotRefused, StreamSlots
slots = StreamSlots(Path(sys.argv[1]), per_user=int(sys.argv[2]), per_process=100)
held = []
for _ in range(int(sys.argv[3])):
    try:
        held.append(slots.acquire("alice"))
    except SlotRefused:
        break
print(len(held), flush=True)
sys.stdin.read()
"""


def holder(directory: Path, per_user: int, count: int) -> tuple[subprocess.Popen[str], int]:
    """A process holding up to `count` slots of alice, and how many it got."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(directory), str(per_user),
                              str(count)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    return child, int(child.stdout.readline())


def take_all(slots: StreamSlots, user: str) -> list[StreamSlot]:
    """Slots until the user's cap refuses one."""
    held = []
    while True:
        try:
            held.append(slots.acquire(user))
        except SlotRefused as refused:
            assert refused.scope == "user"
            return held


def test_the_user_cap_holds_across_processes(tmp_path: Path) -> None:
    here = StreamSlots(tmp_path, per_user=10, per_process=100)
    mine = [here.acquire("alice") for _ in range(3)]
    other, got = holder(tmp_path, 10, 10)
    try:
        assert got == 7  # the other process gets what this one left
        assert take_all(here, "alice") == []
        mine[1].release()
        mine[1] = here.acquire("alice")  # a slot given back is found again
        assert take_all(here, "alice") == []
        assert take_all(here, "bob") != []  # another user's slots are their own
        third, got = holder(tmp_path, 10, 10)
        third.communicate("")
        assert got == 0
    finally:
        other.communicate("")  # its process ends: the kernel frees its slots
    mine += take_all(here, "alice")
    assert len(mine) == 10
    assert {slot.index for slot in mine} == set(range(10))
    for slot in mine:
        slot.release()
    assert len(take_all(here, "alice")) == 10


def test_opening_many_streams_tries_about_one_file_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opens = 0
    real_open = os.open

    def counting_open(*args: object, **kwargs: object) -> int:
        nonlocal opens
        opens += 1
        return real_open(*args, **kwargs)  # type: ignore[arg-type]

    slots = StreamSlots(tmp_path, per_user=1000, per_process=1000)
    monkeypatch.setattr(os, "open", counting_open)
    held = [slots.acquire("alice") for _ in range(500)]
    assert opens == 500  # searching from index 0 each time took 125,250
    for slot in held[100:200]:
        slot.release()
    opens = 0
    held[100:200] = [slots.acquire("alice") for _ in range(100)]
    assert opens <= 200
    assert len({slot.index for slot in held}) == 500
    # Another process's slots are found by their locks, each tried once per search.
    other = StreamSlots(tmp_path, per_user=1000, per_process=1000)
    opens = 0
    more = [other.acquire("alice") for _ in range(10)]
    assert opens <= 500 + 10
    assert not {slot.index for slot in more} & {slot.index for slot in held}
    assert slots.in_use == 500 and other.in_use == 10
