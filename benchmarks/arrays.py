"""A job array of 1,000 tasks to a real Slurm site: one native array vs 1,000 jobs (prints JSON).

Brings up its own testbed (needs root) and measures on `roadrunner` (Slurm 22.05, one node,
2 cores, so all but two tasks pend), from `POST /api/v1/jobs` of `array: 0-999` until
every task is QUEUED in the gateway with its Slurm id and squeue lists all 1,000:

1. native: the gateway sends the array as ONE `sbatch --array=0-999`
   (GRIDGATE_JOB_ARRAY_NATIVE on, the default);
2. task by task: the same gateway and array with native arrays off, each task its own
   Slurm job (submitted in the worker's batches, several sbatch per remote command);
3. raw: a user's 1,000 `sbatch --parsable --wrap` over one persistent SSH connection
   (the gridgate SshTransport, not the gateway).

Submission commands are counted by wrapping the site adapter's transport (`sbatch` run
alone, or the batch script that runs many). The gateway runs in this process (SQLite,
the REST API through a TestClient, the worker cycled back to back). Slurm's MaxArraySize
and MaxJobCount are read from `scontrol show config` and printed: 1,000 tasks need
MaxArraySize > 999 (the default, 1001, allows it). After each phase `scancel -u gwcomm`.

    sudo .venv/bin/python benchmarks/arrays.py [--tasks 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from adapters.transport import CommandResult, Transport  # noqa: E402
from benchmarks import site_submission  # noqa: E402
from benchmarks.site_submission import site_transport, wait_until  # noqa: E402
from gateway.db.models import Attempt, Job  # noqa: E402
from testbed.state import TestbedInfo  # noqa: E402
from tests.live.gateway import LiveGateway, live_gateway  # noqa: E402
from tests.testbed.fixture import running_testbed, unique_config  # noqa: E402

SITE = "roadrunner"
ACCOUNT = "gwcomm"
WALLTIME_S = 700
TARGET_COMMANDS = 1
TARGET_SPEEDUP_MIN = 5.0  # task-by-task seconds / native seconds


class CountingTransport:
    """A Transport that counts the remote commands that submit (one sbatch, or a batch
    script running several) and the sbatch runs in them."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.submissions = 0
        self.sbatch_runs = 0
        self.commands = 0

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float = 60.0) -> CommandResult:
        self.commands += 1
        runs = sum(word.rsplit("/", 1)[-1] == "sbatch" for word in argv)
        if tuple(argv[:2]) == ("sh", "-c") and "gw-submit" in argv[2]:
            runs = len(re.findall(r"(?:^|[\s/])sbatch --parsable", argv[2]))
        if runs:
            self.submissions += 1
            self.sbatch_runs += runs
        return self.inner.run(argv, stdin=stdin, timeout=timeout)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        self.inner.put_bytes(data, path, mode=mode)

    def read_bytes(self, path: str, offset: int = 0,
                   limit: int = 1 << 20) -> tuple[bytes, int | None]:
        return self.inner.read_bytes(path, offset, limit)

    def close(self) -> None:
        self.inner.close()


def checked(transport: Transport, argv: Sequence[str]) -> str:
    return site_submission.checked(transport, argv, timeout=120)


def listed(poller: Transport) -> int:
    """Jobs and array tasks of the account squeue lists, each task on a line (`-r`)."""
    return len(checked(poller, ["squeue", "-h", "-r", "-u", ACCOUNT, "-o", "%i"]).split())


def drain(poller: Transport) -> None:
    checked(poller, ["scancel", "-u", ACCOUNT])
    wait_until("squeue to drain", lambda: listed(poller) == 0, 300, 0.5)


@contextmanager
def counted(gw: LiveGateway) -> Iterator[CountingTransport]:
    adapter: Any = gw.runtime.sites.get(SITE).adapter
    inner = adapter.transport
    counter = CountingTransport(inner)
    adapter.transport = counter
    try:
        yield counter
    finally:
        adapter.transport = inner


def queued_tasks(gw: LiveGateway, array_id: str) -> int:
    with gw.runtime.sessions() as session:
        return session.scalar(
            select(func.count()).select_from(Attempt).join(Job, Job.id == Attempt.job_id)
            .where(Job.array_job_id == array_id, Attempt.native_id.is_not(None))) or 0


def through_gateway(testbed: TestbedInfo, base: Path, poller: Transport, tasks: int,
                    native: bool) -> dict[str, Any]:
    """POST the array, cycle the worker until every task has its Slurm id and squeue
    lists them all; the time, the cycles and the submission commands."""
    with live_gateway(testbed, (SITE,), base, local_site_enabled=False,
                      job_array_native=native) as gw:
        headers = gw.token("bench")
        # The site's first connection, outside the measure.
        adapter: Any = gw.runtime.sites.get(SITE).adapter
        checked(adapter.transport, ["true"])
        with counted(gw) as counter:
            t0 = time.perf_counter()
            first = gw.submit(headers, {
                "name": "bench array", "site": SITE, "executable": "/bin/sleep",
                "args": ["600"], "array": f"0-{tasks - 1}",
                "resources": {"walltime": WALLTIME_S}})
            array_id = gw.job(first)["array_job_id"]
            cycles = 0
            while queued_tasks(gw, array_id) < tasks:
                gw.worker.run_once()
                cycles += 1
                if time.perf_counter() - t0 > 1800:
                    raise RuntimeError(f"only {queued_tasks(gw, array_id)} tasks queued")
            in_gateway = time.perf_counter() - t0
            wait_until("squeue to list every task", lambda: listed(poller) >= tasks, 300, 0.1)
            elapsed = time.perf_counter() - t0
            submissions, commands = counter.submissions, counter.commands
            sbatch_runs = counter.sbatch_runs
        drain(poller)
    return {"seconds": round(elapsed, 2), "seconds_until_queued_in_gateway": round(in_gateway, 2),
            "submission_commands": submissions, "sbatch_runs": sbatch_runs,
            "remote_commands": commands,
            "worker_cycles": cycles, "tasks_per_second": round(tasks / elapsed, 1)}


def raw_sbatch(poller: Transport, tasks: int) -> dict[str, Any]:
    """A user's `sbatch --parsable --wrap` once per task over one SSH connection."""
    submitting = site_submission.time_raw_sbatch(poller, tasks, "raw-{index}",
                                                 "--output=/dev/null", timeout=120)
    t0 = time.perf_counter()
    wait_until("squeue to list every job", lambda: listed(poller) >= tasks, 300, 0.1)
    elapsed = submitting + time.perf_counter() - t0
    drain(poller)
    return {"seconds": round(elapsed, 2), "submission_commands": tasks, "sbatch_runs": tasks,
            "tasks_per_second": round(tasks / elapsed, 1)}


def slurm_limits(poller: Transport) -> dict[str, str]:
    found = {}
    for line in checked(poller, ["scontrol", "show", "config"]).splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("MaxArraySize", "MaxJobCount", "SLURM_VERSION"):
            found[key.strip()] = value.strip()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--no-raw", action="store_true", help="skip the raw sbatch baseline")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gw-bench-arrays-"))
    result: dict[str, Any] = {"benchmark": "arrays", "site": SITE, "tasks": args.tasks,
                              "scheduler": "slurm (testbed, 1 node, 2 cores)",
                              "cpu_count": os.cpu_count(),
                              "gateway": "in-process: SQLite, TestClient, worker cycled"}
    try:
        with running_testbed(unique_config()) as info:
            poller = site_transport(info.sites[SITE])
            try:
                result["slurm"] = slurm_limits(poller)
                drain(poller)
                result["loadavg_1m_start"] = os.getloadavg()[0]
                result["native"] = through_gateway(info, base / "native", poller,
                                                   args.tasks, native=True)
                result["task_by_task"] = through_gateway(info, base / "tasks", poller,
                                                         args.tasks, native=False)
                if not args.no_raw:
                    result["raw_sbatch"] = raw_sbatch(poller, args.tasks)
                result["loadavg_1m_end"] = os.getloadavg()[0]
            finally:
                try:
                    checked(poller, ["scancel", "-u", ACCOUNT])
                finally:
                    poller.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    native = result["native"]["seconds"]
    result["speedup_vs_task_by_task"] = round(result["task_by_task"]["seconds"] / native, 1)
    if "raw_sbatch" in result:
        result["speedup_vs_raw_sbatch"] = round(result["raw_sbatch"]["seconds"] / native, 1)
    result["met"] = {
        "one_submission_command": result["native"]["submission_commands"] == TARGET_COMMANDS,
        "at_least_5x_faster": result["speedup_vs_task_by_task"] >= TARGET_SPEEDUP_MIN
        and result.get("speedup_vs_raw_sbatch", TARGET_SPEEDUP_MIN) >= TARGET_SPEEDUP_MIN,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
