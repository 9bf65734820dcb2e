"""Native job arrays as the testbed's real Slurm and Grid Engine print them.

Submits one small throttled array to each scheduler by hand (no gateway) and checks the
shapes the array parsers rely on (adapters.slurm.arrays, adapters.sge.arrays): Slurm's
pending tasks folded as `ID_[4-5%2]` and running ones as `ID_3`, sacct's `ID_3` lines,
Grid Engine's task range in the ja-task-ID column and qacct's `taskid`. With
GRIDGATE_RECORD_DIR set, the raw outputs are also written there (to refresh the recorded
outputs of tests/schedulers/test_native_arrays.py).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

from adapters.base import NativeState
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.transport import CommandResult
from testbed.state import TestbedInfo
from tests.testbed.fixture import ssh
from tests.waiting_jobs import let_go_at, waits

COMMUNITY = "gwcomm"


def _record(name: str, text: str) -> None:
    where = os.environ.get("GRIDGATE_RECORD_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        Path(where, name).write_text(text)


def _go_path() -> str:
    """A file at the site whose creation lets the array's tasks go on."""
    return f"/tmp/go-array-{uuid.uuid4().hex[:8]}"


def _result(argv: list[str], stdout: str) -> CommandResult:
    return CommandResult(tuple(argv), 0, stdout.encode(), b"")


def test_slurm_array_outputs(testbed: TestbedInfo) -> None:
    site = testbed.sites["roadrunner"]
    # Each task waits to be let go, so tasks are pending and running when squeue is read.
    go = _go_path()
    job = ssh(site, COMMUNITY, ["sbatch", "--parsable", "--array=0-5%2",
                                "--job-name=gw-rec-array", "--output=/dev/null",
                                "--wrap", waits("sleep 4", go=go)]).stdout.strip()
    assert re.fullmatch(r"[0-9]+", job)
    squeue = ["squeue", "--noheader", "--states=all", f"--jobs={job}",
              "--format=%i|%T|%r|%S|%j"]
    deadline = time.monotonic() + 120
    seen_folded = seen_running = ""
    while time.monotonic() < deadline and not (seen_folded and seen_running):
        out = ssh(site, COMMUNITY, squeue).stdout
        if "[" in out and "RUNNING" in out:
            seen_folded = seen_running = out
        time.sleep(0.5)
    let_go_at(site, go)
    _record("slurm-squeue.txt", seen_folded)
    assert seen_folded, "never saw pending tasks folded beside running ones"
    ids = [f"{job}_{i}" for i in range(6)]
    states = SlurmDialect().parse_status(_result(squeue, seen_folded), ids)
    assert sorted(states) == sorted(ids)
    running = [i for i, s in states.items() if s.state is NativeState.RUNNING]
    assert 1 <= len(running) <= 2
    sacct = ["sacct", "--parsable2", "--noheader", "--allocations", "--allusers",
             f"--jobs={job}", "--format=JobID,State,ExitCode,Start,End,Reason,JobName"]
    deadline = time.monotonic() + 120
    out = ""
    while time.monotonic() < deadline:
        out = ssh(site, COMMUNITY, sacct).stdout
        if out.count("COMPLETED") == 6:
            break
        time.sleep(1)
    _record("slurm-sacct.txt", out)
    assert {f"{job}_{i}" for i in range(6)} <= {line.split("|")[0] for line in out.splitlines()}
    # Usage records (what a task is charged from) name each task too.
    dialect = SlurmDialect()
    records = []
    for argv in dialect.usage_commands(ids):
        answer = ssh(site, COMMUNITY, list(argv)).stdout
        records += dialect.parse_usage(_result(list(argv), answer))
    assert sorted(r.native_id for r in records) == sorted(ids)
    assert all(r.state is NativeState.COMPLETED and r.elapsed >= 3 for r in records)


def test_sge_array_outputs(testbed: TestbedInfo) -> None:
    site = testbed.sites["galaxy"]
    # Each task waits to be let go (the script on qsub's stdin), as on Slurm above.
    go = _go_path()
    out = ssh(site, COMMUNITY, ["qsub", "-terse", "-t", "1-6", "-tc", "2", "-N", "gw-rec-array",
                                "-o", "/dev/null", "-e", "/dev/null", "-S", "/bin/sh"],
              input_text=waits("sleep 4", go=go) + "\n").stdout.strip()
    job = out.split(".")[0]
    assert re.fullmatch(r"[0-9]+", job), out
    _record("sge-qsub.txt", out + "\n")
    deadline = time.monotonic() + 120
    listing = ""
    while time.monotonic() < deadline:
        listing = ssh(site, COMMUNITY, ["qstat", "-xml", "-u", "*"]).stdout
        if "<tasks>" in listing and 'state="running"' in listing:
            break
        time.sleep(0.5)
    let_go_at(site, go)
    _record("sge-qstat.xml", listing)
    ids = [f"{job}.{t}" for t in range(1, 7)]
    states = SgeDialect().parse_status(_result(["qstat"], listing), ids)
    assert sorted(states) == ids
    assert any(s.state is NativeState.RUNNING for s in states.values())
    deadline = time.monotonic() + 120
    accounted = ""
    while time.monotonic() < deadline:
        accounted = ssh(site, COMMUNITY, ["qacct", "-j", job], check=False).stdout
        if accounted.count("taskid") == 6:
            break
        time.sleep(1)
    _record("sge-qacct.txt", accounted)
    assert accounted.count("taskid") == 6
