"""The gateway's event stream (GET /api/v1/events) read as Server-Sent Events: a parser
of the SSE wire format, and an iterator that resumes a dropped stream with
`Last-Event-ID`, so no event is lost and none comes twice."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import httpx

from gateway.client.errors import GatewayUnreachable, ReplayGone, transport_reason
from gateway.schemas.events import STREAM_GONE, GatewayEvent

if TYPE_CHECKING:
    from gateway.client.transport import ClientBase


@dataclass
class Message:
    """One SSE message: its `id` (None if it had none), `event` name and `data`."""

    event: str = "message"
    data: list[str] = field(default_factory=list)
    id: str | None = None


# Ids of the latest events a stream remembers to drop one sent again (a resend is of
# the events of the last seconds before the resume point).
REMEMBERED_IDS = 10_000


def messages(lines: Iterable[str]) -> Iterator[Message]:
    """The messages of an SSE stream's lines (comments such as heartbeats skipped)."""
    current = Message()
    for line in lines:
        if not line:
            if current.data:
                yield current
            current = Message()
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            current.data.append(value)
        elif name == "event":
            current.event = value
        elif name == "id" and "\0" not in value:
            current.id = value


def _later(last: str | None, event_id: str) -> str:
    # A late event sent again has a lower id than the last: resume after the highest.
    if last is not None and last.isdigit() and event_id.isdigit() and int(last) > int(event_id):
        return last
    return event_id


def stream_events(client: ClientBase, params: Sequence[tuple[str, str]],
                  last_event_id: str | None, reconnects: int) -> Iterator[GatewayEvent]:
    """Every event of the stream (GET /events with these query `params`), resumed after
    a dropped connection (or a gateway that ended it while stopping) up to `reconnects`
    times in a row. An event a resumed stream sends again (one that may have committed
    late: gateway.services.events.feed) is passed on once."""
    last = last_event_id
    received: dict[str, None] = {}  # the ids of the latest events, oldest first
    failures = 0
    started = False  # a first request that fails is an error, not a drop to resume
    while True:
        headers = {"Accept": "text/event-stream"}
        if last is not None:
            headers["Last-Event-ID"] = last
        try:
            with client._stream("GET", "/events", params=params, headers=headers) as response:
                started = True
                for message in messages(response.iter_lines()):
                    if message.event == STREAM_GONE:
                        gone = json.loads("\n".join(message.data))
                        raise ReplayGone(gone["detail"], gone["last_event_id"])
                    event = cast(GatewayEvent, json.loads("\n".join(message.data)))
                    failures = 0
                    if message.id is not None:
                        if message.id in received:
                            continue
                        received[message.id] = None
                        if len(received) > REMEMBERED_IDS:
                            del received[next(iter(received))]
                        last = _later(last, message.id)
                    yield event
            reason = "the gateway ended the stream"
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            reason = f"the connection broke ({transport_reason(exc)})"
        except GatewayUnreachable as exc:
            reason = exc.reason
            if not started:
                raise
        failures += 1
        if failures > reconnects:
            raise GatewayUnreachable(client.base_url, f"{reason}, {reconnects} times in a row")
        time.sleep(min(2.0 ** failures / 4, 5.0))
