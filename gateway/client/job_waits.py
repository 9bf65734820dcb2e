"""Waiting for a job to reach a state: on the event stream (filtered to the job), the
moment it changes, or by polling where the stream is not to be had
(gateway.client.stream_waits says when, and why no change falls between)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.client.models import Job
from gateway.client.stream_waits import on_stream, passed, poll_until, stream_or_poll

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient


def wait_for_state(client: GatewayClient, job_id: str, until: frozenset[str],
                   deadline: float | None, on_update: Callable[[Job], None] | None,
                   poll_seconds: float) -> Job:
    """The job's view once its state is in `until`, or the last one at `deadline`
    (a time.monotonic() value)."""
    read = _reader(client, job_id, on_update)
    return stream_or_poll(
        lambda: on_stream(client, [("job", job_id)], read,
                          lambda job: job["state"] in until, deadline),
        lambda: poll_until(read, lambda job: job["state"] in until, deadline, poll_seconds))


def poll_for_state(client: GatewayClient, job_id: str, until: frozenset[str],
                   deadline: float | None, on_update: Callable[[Job], None] | None,
                   poll_seconds: float) -> Job:
    """`wait_for_state` by reading the job: quickly at first (short jobs end fast),
    then every `poll_seconds`."""
    return poll_until(_reader(client, job_id, on_update),
                      lambda job: job["state"] in until or passed(deadline), deadline,
                      poll_seconds)


def _reader(client: GatewayClient, job_id: str,
            on_update: Callable[[Job], None] | None) -> Callable[[], Job]:
    def read() -> Job:
        job = client.get_job(job_id)
        if on_update is not None:
            on_update(job)
        return job
    return read
