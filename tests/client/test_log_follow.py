"""`GatewayClient.follow` (what `gridgate logs -f` uses) learns that the job has ended
from the event stream, so it stops once the job ends with every byte of its output;
against a gateway without a stream the gateway's follow ends it, as before. Jobs are
held by a file, never by a time."""

from __future__ import annotations

import threading
from typing import Any

from tests.client.live import LiveGateway
from tests.client.test_job_waits import Counting, client_with, counting, store
from tests.waiting_jobs import let_jobs_go, waits

__all__ = ["counting", "store"]  # fixtures


def follow_held_job(gateway: LiveGateway, store: Any, transport: Counting) -> bytes:
    """A job that prints, waits to be let go, then prints again: followed from its start,
    let go once its first line came; every byte the follow gave."""
    with client_with(gateway, store, transport) as client:
        job_id = client.submit({"name": "f", "executable": "sh",
                                "args": ["-c", "echo one; " + waits("echo two")]})["id"]
        got: list[bytes] = []
        first = threading.Event()

        def follow() -> None:
            for chunk in client.follow(job_id):
                got.append(chunk)
                if b"one\n" in b"".join(got):
                    first.set()
            first.set()  # ended early: the assertion below says how

        follower = threading.Thread(target=follow)
        follower.start()
        first.wait(timeout=300)
        let_jobs_go(gateway.runtime, job_id)
        follower.join(timeout=300)
        assert not follower.is_alive()
        assert client.get_job(job_id)["state"] == "COMPLETED"
    return b"".join(got)


def test_follow_ends_with_all_output_when_the_job_ends(
        gateway: LiveGateway, store: Any, counting: Counting) -> None:
    assert follow_held_job(gateway, store, counting) == b"one\ntwo\n"
    assert "/api/v1/events" in counting.paths  # the job's end came as an event


def test_follow_against_a_gateway_without_an_event_stream(
        gateway: LiveGateway, store: Any) -> None:
    old = Counting(hide_events=True)
    try:
        assert follow_held_job(gateway, store, old) == b"one\ntwo\n"
    finally:
        old.close()
    assert old.paths.count("/api/v1/events") == 1  # tried once; the gateway ended it
