"""Waiting on the event stream for something a read shows (a job's state, a workflow's),
with the fallback to polling where the stream is not to be had: a gateway without one,
the user's or the process's stream cap reached, or a stream that keeps breaking.

On the stream, the thing is read once its subscription is open (the response's headers
came), so a change made before is in that read and one made after comes as an event:
none falls between. Each event is followed by a read, the view the caller gets. A
deadline is kept by shutting the stream's socket when it passes, which ends a read
blocked between events at once.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from gateway.client.errors import GatewayUnreachable, ProblemError
from gateway.client.event_stream import messages
from gateway.schemas.events import JOB_STATE_TYPE

if TYPE_CHECKING:
    from gateway.client.transport import ClientBase

T = TypeVar("T")

# Answers to GET /events after which a wait polls instead: none there (an older
# gateway), the user's or the process's stream cap reached.
POLL_INSTEAD = frozenset({404, 405, 429, 503})
# Broken streams in a row after which a wait polls instead.
MAX_BREAKS = 3
# What a broken stream raises (the gateway went away, the connection dropped).
BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, GatewayUnreachable)


def stream_or_poll(watch: Callable[[], T | None], poll: Callable[[], T]) -> T:
    """What `watch()` (a wait on the stream; None when the gateway ended the stream)
    returns, opened again after a stream ended or broke; what `poll()` returns instead
    against a gateway without a stream, at a stream cap, or after MAX_BREAKS broken
    streams in a row."""
    breaks = 0
    while breaks < MAX_BREAKS:
        try:
            found = watch()
        except ProblemError as exc:
            if exc.status not in POLL_INSTEAD:
                raise
            break
        except BROKEN:
            breaks += 1
            time.sleep(0.25 * breaks)
            continue
        if found is not None:
            return found
        breaks = 0  # the gateway ended the stream (it is stopping): open another
    return poll()


def poll_until(read: Callable[[], T], done: Callable[[T], bool], deadline: float | None,
               poll_seconds: float) -> T:
    """`read()` until `done` says so or `deadline` (a time.monotonic() value) passes:
    quickly at first (short jobs end fast), then every `poll_seconds`."""
    delay = min(0.2, poll_seconds)
    while True:
        found = read()
        if done(found) or passed(deadline):
            return found
        time.sleep(delay if deadline is None else
                   max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(poll_seconds, delay * 2)


def on_stream(client: ClientBase, params: Sequence[tuple[str, str]], read: Callable[[], T],
              done: Callable[[T], bool], deadline: float | None,
              opened: Callable[[httpx.Response], None] | None = None,
              types: Collection[str] = (JOB_STATE_TYPE,)) -> T | None:
    """`read()` once the stream of events matching `params` is open (`opened` is told
    its response), then after each event of `types`, until `done` says so or the
    deadline passes (the last read); None when the gateway ended the stream first."""
    with client._stream("GET", "/events", params=params,
                        headers={"Accept": "text/event-stream"}) as response:
        if opened is not None:
            opened(response)
        found = read()
        if done(found) or passed(deadline):
            return found
        timer = None if deadline is None else shut_at(response, deadline)
        try:
            for message in messages(response.iter_lines()):
                if message.event not in types:
                    continue
                found = read()
                if done(found) or passed(deadline):
                    return found
        except (httpx.RemoteProtocolError, httpx.ReadError):
            if not passed(deadline):
                raise
        finally:
            if timer is not None:
                timer.cancel()
    return read() if passed(deadline) else None


def passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def shut(response: httpx.Response) -> None:
    """Shut the response's socket: a read blocked on it (in another thread) returns."""
    stream: Any = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def shut_at(response: httpx.Response, deadline: float) -> threading.Timer:
    """A timer that shuts the response's socket at `deadline`."""
    timer = threading.Timer(max(0.0, deadline - time.monotonic()), shut, (response,))
    timer.daemon = True
    timer.start()
    return timer
