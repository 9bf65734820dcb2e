"""The worker sends its outbox (webhooks, mail) on a thread of its own: a webhook
receiver that takes the connection and never answers holds that thread until its
timeout (an hour here), while jobs at the sites go on to their end."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from tests.conftest import MakeUser


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, run_worker=False,
                    public_url="http://gateway.test", webhook_allowed_ranges="127.0.0.0/8",
                    webhook_timeout_seconds=3600, worker_poll_seconds=0.05)


@pytest.fixture
def silent_receiver() -> Iterator[str]:
    """A URL whose server takes connections (the kernel's backlog) and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    finally:
        server.close()  # resets the connections waiting: the stuck POST ends


def test_a_receiver_that_never_answers_holds_back_no_job(
        runtime: Runtime, client: TestClient, make_user: MakeUser,
        silent_receiver: str) -> None:
    user = make_user()
    hook = client.post("/api/v1/webhooks", headers=user.headers, json={"url": silent_receiver})
    assert hook.status_code == 201, hook.text
    stop = threading.Event()
    worker = threading.Thread(target=Worker(runtime).run, args=(stop,), daemon=True)
    worker.start()
    try:
        first = client.post("/api/v1/jobs", headers=user.headers,
                            json={"name": "one", "executable": "/bin/true"})
        assert first.status_code == 202, first.text
        deliveries = f"/api/v1/webhooks/{hook.json()['id']}/deliveries"
        deadline = time.monotonic() + 120
        # The outbox is stuck on the first delivery (nothing recorded as sent) ...
        while not client.get(deliveries, headers=user.headers).json()["items"]:
            assert time.monotonic() < deadline, "no delivery was made"
            time.sleep(0.05)
        # ... and a job submitted now still runs to its end.
        second = client.post("/api/v1/jobs", headers=user.headers,
                             json={"name": "two", "executable": "/bin/true"}).json()["id"]
        while (state := client.get(f"/api/v1/jobs/{second}",
                                   headers=user.headers).json()["state"]) != "COMPLETED":
            assert time.monotonic() < deadline, f"the job is still {state}"
            time.sleep(0.05)
        items = client.get(deliveries, headers=user.headers).json()["items"]
        assert all(item["state"] == "pending" for item in items), items
    finally:
        stop.set()
    # The receiver's close resets the stuck POST; the worker then stops.
