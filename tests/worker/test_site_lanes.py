"""Each site's steps run on lanes of their own (gateway.worker.lanes, issue 32): a site
whose steps hang (held here by an event the test sets, as a connection that hangs until
its timeout would) delays no other site, and a status call that hangs delays no
submission at its own site."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import SiteStep, StepContext
from gateway.worker.lanes import SiteLanes
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_hedging import twin_runtime
from tests.worker.test_worker_local import post

WAIT = 120.0


class Held:
    """Steps that, at the sites or step names given, wait until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def wrap(self, step: SiteStep) -> SiteStep:
        def held(ctx: StepContext, site: SiteEntry) -> bool:
            self.entered.set()
            assert self.release.wait(WAIT), "never released"
            return step(ctx, site)
        return held


def holding(worker: Worker, held: Held, *, site: str | None = None,
            step: str | None = None) -> Worker:
    """The worker with the steps at `site` (all of them), or the steps named `step`
    (at every site), held."""
    steps = []
    for name, call, hurries, lane in worker.site_steps:
        if step == name:
            call = held.wrap(call)
        elif site is not None:
            call = _at(site, held.wrap(call), call)
        steps.append((name, call, hurries, lane))
    worker.site_steps = tuple(steps)
    return worker


def _at(site: str, held: SiteStep, free: SiteStep) -> SiteStep:
    return lambda ctx, entry: (held if entry.name == site else free)(ctx, entry)


@contextmanager
def running(worker: Worker, held: Held) -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        held.release.set()
        stop.set()
        thread.join(timeout=WAIT)
    assert not thread.is_alive(), "the worker did not stop"


def state_of(client: TestClient, headers: dict[str, str], job_id: str) -> str:
    job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return str(job["state"])


def wait_for(client: TestClient, headers: dict[str, str], job_id: str,
             states: set[str]) -> str:
    deadline = time.monotonic() + WAIT
    while (state := state_of(client, headers, job_id)) not in states:
        assert time.monotonic() < deadline, f"job {job_id} stayed {state}"
        time.sleep(0.05)
    return state


def test_a_site_that_hangs_delays_no_other(runtime: Runtime, client: TestClient,
                                          make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    held = Held()
    worker = holding(Worker(rt, "w"), held, site="twin")
    user = make_user()
    with running(worker, held):
        assert held.entered.wait(WAIT)  # 'twin' hangs from the first cycle on
        for n in range(3):  # one after the other: each cycle after the hang began
            job_id = post(client, user.headers, {"name": f"j{n}", "executable": "/bin/true",
                                                 "site": "local"})
            assert wait_for(client, user.headers, job_id, {"COMPLETED", "FAILED"}) \
                == "COMPLETED"
        assert not held.release.is_set()


def test_a_status_call_that_hangs_delays_no_submission(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    held = Held()
    worker = holding(Worker(runtime, "w"), held, step="poll")
    user = make_user()
    first = post(client, user.headers, {"name": "first", "executable": "/bin/sleep",
                                        "args": ["600"], "site": "local"})
    with running(worker, held):
        assert wait_for(client, user.headers, first, {"QUEUED", "RUNNING"})
        assert held.entered.wait(WAIT)  # the status call of 'first' hangs
        later = post(client, user.headers, {"name": "later", "executable": "/bin/true",
                                            "site": "local"})
        assert wait_for(client, user.headers, later, {"QUEUED", "RUNNING"})
        assert not held.release.is_set()
        client.post(f"/api/v1/jobs/{first}/cancel", headers=user.headers)
    # The worker may stop before it acts on the cancel: passes of its own until it has,
    # so that 'first' (sleep 600) does not outlive the test (it once did, by 10 minutes).
    deadline = time.monotonic() + WAIT
    while state_of(client, user.headers, first) != "CANCELLED":
        assert time.monotonic() < deadline, "the cancel was never carried out"
        worker.run_once()


def test_a_pass_that_leaves_work_runs_again_and_tells(runtime: Runtime) -> None:
    left = [True, False]  # the first pass leaves work to do, the second none
    passes: list[tuple[str, str]] = []
    told: list[str] = []
    done = threading.Semaphore(0)

    def run_pass(site: SiteEntry, lane: str) -> bool:
        passes.append((site.name, lane))
        done.release()
        return left.pop(0)

    lanes = SiteLanes(runtime.sites, run_pass, told.append)
    try:
        lanes.kick("local", "send")
        assert done.acquire(timeout=WAIT) and done.acquire(timeout=WAIT)
    finally:
        lanes.stop(timeout=WAIT)
    assert passes == [("local", "send")] * 2
    assert told == ["local"]
