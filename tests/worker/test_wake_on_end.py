"""A local job's end wakes the worker's loop (gateway.worker.wakes, adapters.local.watch):
with an hour between the worker's cycles, only the wake can see the job end."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from gateway.worker.wakes import Wakes
from tests.conftest import MakeUser
from tests.waiting_jobs import let_jobs_go, waits
from tests.worker.test_worker_local import post

HOUR = 3600.0


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"worker_poll_seconds": HOUR})


def job_of(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def test_a_local_jobs_end_wakes_the_loop(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "held", "executable": "/bin/sh",
                                         "args": ["-c", waits("echo done")], "site": "local"})
    stop = threading.Event()
    thread = threading.Thread(target=Worker(runtime, "w").run, args=(stop,), daemon=True)
    thread.start()
    try:
        # Submitted by the first cycle: the next is an hour away.
        deadline = time.monotonic() + 120
        while job_of(client, user.headers, job_id)["state"] not in ("QUEUED", "RUNNING"):
            assert time.monotonic() < deadline, "the job was never submitted"
            time.sleep(0.05)
        assert let_jobs_go(runtime, job_id)
        deadline = time.monotonic() + 120
        while (job := job_of(client, user.headers, job_id))["state"] != "COMPLETED":
            assert job["state"] in ("QUEUED", "RUNNING", "STAGING_OUT"), job
            assert time.monotonic() < deadline, f"the job's end woke nothing: {job}"
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive(), "the stop did not end the worker's wait"
    out = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers)
    assert out.text == "done\n"


def test_wakes_gather_into_one_pass_per_site() -> None:
    wakes = Wakes()
    for _ in range(100):
        wakes.wake("local")
    wakes.wake("other")
    # Not early: the wakes of the meantime wait for the pass they gather into.
    assert wakes.wait(0, early=False) == {"local", "other"}
    assert wakes.wait(0) == set()


def test_the_stop_ends_a_wait() -> None:
    wakes = Wakes()
    ended = threading.Event()

    def wait() -> None:
        wakes.wait(HOUR, early=False)
        ended.set()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wakes.stop()
    assert ended.wait(60), "the stop did not end the wait"
    assert wakes.wait(HOUR) == set()  # and every later one at once
