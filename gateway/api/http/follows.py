"""What every long-lived response stream shares (`follow=true` output, the event stream):
one process's slots and poll threads, the problem a refused stream gets, and a response
that gives its slot back however it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio
from fastapi import Request, Response
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gateway.api.http import stopping
from gateway.api.http.event_hub import EventHub
from gateway.api.http.stream_slots import SlotRefused, StreamSlot, StreamSlots
from gateway.api.problems import problem
from gateway.runtime import Runtime

# Threads one process lends to stream polls; more would only compete with short requests.
POLL_THREADS = 2
# A refused stream may try again this many seconds later.
RETRY_AFTER_SECONDS = 10


@dataclass(frozen=True)
class Follows:
    """One process's stream resources, made on first use."""

    slots: StreamSlots
    polls: anyio.CapacityLimiter
    hub: EventHub


def follows(request: Request, runtime: Runtime) -> Follows:
    """This process's stream resources (output follows and event streams share them)."""
    state = request.app.state
    found: Follows | None = getattr(state, "output_follows", None)
    if found is None:
        settings = runtime.settings
        polls = anyio.CapacityLimiter(POLL_THREADS)
        found = Follows(StreamSlots(settings.data_dir / "streams",
                                    settings.output_max_streams_per_user,
                                    settings.output_max_streams),
                        polls, EventHub(runtime, polls))
        state.output_follows = found
        stopping.on_stopping(request.app, found.hub.wake_all)
    return found


def refused(refusal: SlotRefused, request: Request, instead: str) -> Response:
    """429 (the user's cap) or 503 (the process's), with Retry-After; `instead` says what
    else the client may do (", or read with 'offset'")."""
    retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if refusal.scope == "user":
        return problem(429, f"You already have {refusal.cap} streams open (followed output "
                       "and event streams together), the most one user may have at once. "
                       f"Close one{instead}, and try again.",
                       instance=request.url.path, headers=retry)
    return problem(503, f"This server already serves its limit of {refusal.cap} streams "
                   "(followed output and event streams). Try again shortly.",
                   instance=request.url.path, headers=retry)


class SlotResponse(StreamingResponse):
    """A stream holding a slot; the slot is released (and `closing` called) however the
    response ends (finished, client gone, or never started).

    A client that leaves is noticed at once, however long the stream sleeps: Starlette
    listens for the disconnect beside the body (ASGI spec < 2.4, which uvicorn declares)
    and cancels the body; under 2.4 the next write (a heartbeat at the latest) fails."""

    def __init__(self, slot: StreamSlot, content: AsyncIterator[bytes], *, media_type: str,
                 headers: dict[str, str], closing: Callable[[], None] | None = None) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self.slot, self.closing = slot, closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.slot.release()
            if self.closing is not None:
                self.closing()
