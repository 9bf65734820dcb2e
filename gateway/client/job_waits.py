"""Waiting for a job to reach a state: on the event stream, the moment it changes, or by
polling where the stream is not to be had (a gateway without one, the user's stream cap
reached, or a stream that keeps breaking).

On the stream, the job is read once its subscription is open (the response's headers
came), so a change made before is in that read and one made after comes as an event:
none falls between. Each event of the job is followed by a read of the job, the view
the caller gets. A deadline is kept by shutting the stream's socket when it passes,
which ends a read blocked between events at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from gateway.client.errors import GatewayUnreachable, ProblemError
from gateway.client.event_stream import messages
from gateway.client.models import Job
from gateway.schemas.events import JOB_STATE_TYPE

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient

# Answers to GET /events after which a wait polls instead: none there (an older
# gateway), the user's or the process's stream cap reached.
POLL_INSTEAD = frozenset({404, 405, 429, 503})
# Broken streams in a row after which a wait polls instead.
MAX_BREAKS = 3


def wait_for_state(client: GatewayClient, job_id: str, until: frozenset[str],
                   deadline: float | None, on_update: Callable[[Job], None] | None,
                   poll_seconds: float) -> Job:
    """The job's view once its state is in `until`, or the last one at `deadline`
    (a time.monotonic() value)."""
    breaks = 0
    while breaks < MAX_BREAKS:
        try:
            job = _on_stream(client, job_id, until, deadline, on_update)
        except ProblemError as exc:
            if exc.status not in POLL_INSTEAD:
                raise
            break
        except (httpx.RemoteProtocolError, httpx.ReadError, GatewayUnreachable):
            breaks += 1
            time.sleep(0.25 * breaks)
            continue
        if job is not None:
            return job
        breaks = 0  # the gateway ended the stream (it is stopping): open another
    return poll_for_state(client, job_id, until, deadline, on_update, poll_seconds)


def poll_for_state(client: GatewayClient, job_id: str, until: frozenset[str],
                   deadline: float | None, on_update: Callable[[Job], None] | None,
                   poll_seconds: float) -> Job:
    """`wait_for_state` by reading the job: quickly at first (short jobs end fast),
    then every `poll_seconds`."""
    delay = min(0.2, poll_seconds)
    while True:
        job = client.get_job(job_id)
        if on_update is not None:
            on_update(job)
        if job["state"] in until or _passed(deadline):
            return job
        time.sleep(delay if deadline is None else
                   max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(poll_seconds, delay * 2)


def _on_stream(client: GatewayClient, job_id: str, until: frozenset[str],
               deadline: float | None, on_update: Callable[[Job], None] | None
               ) -> Job | None:
    """The job once in `until` or at the deadline; None when the gateway ended the
    stream first."""
    with client._stream("GET", "/events", params=[("job", job_id)],
                        headers={"Accept": "text/event-stream"}) as response:
        job = client.get_job(job_id)
        if on_update is not None:
            on_update(job)
        if job["state"] in until or _passed(deadline):
            return job
        timer = None if deadline is None else _shut_at(response, deadline)
        try:
            for message in messages(response.iter_lines()):
                if message.event != JOB_STATE_TYPE:
                    continue
                job = client.get_job(job_id)
                if on_update is not None:
                    on_update(job)
                if job["state"] in until or _passed(deadline):
                    return job
        except (httpx.RemoteProtocolError, httpx.ReadError):
            if not _passed(deadline):
                raise
        finally:
            if timer is not None:
                timer.cancel()
    return client.get_job(job_id) if _passed(deadline) else None


def _passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _shut_at(response: httpx.Response, deadline: float) -> threading.Timer:
    """A timer that shuts the response's socket at `deadline` (a read blocked on it
    then returns)."""
    stream: Any = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None

    def shut() -> None:
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), shut)
    timer.daemon = True
    timer.start()
    return timer
