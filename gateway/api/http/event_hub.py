"""One process's reader of the event log for all its event streams.

A thousand streams each polling the `events` table would cost a thousand queries per
change. The hub reads it once for all of them: one unfiltered FeedCursor (so late
commits are found once too), woken the moment a transaction that wrote events commits
(gateway.repositories.events.signal: NOTIFY from any process on PostgreSQL, a
callback in this one) and otherwise every `events_poll_seconds`. Each event is made
into its SSE message once, and offered to every subscription whose filter it passes.

A subscription's buffer is bounded: a client that reads slower than events arrive is
cut off (`overflowed`) and resumes with Last-Event-ID from the durable log, instead of
holding the process's memory. The hub runs only while some stream subscribes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections import deque
from collections.abc import Callable

import anyio
from sqlalchemy.exc import OperationalError

from gateway.repositories.events import signal as event_signal
from gateway.repositories.events.feed import FeedFilter, FeedRow
from gateway.runtime import Runtime
from gateway.schemas.events import GatewayEvent
from gateway.services.events import feed as event_feed
from gateway.services.events.feed import FeedCursor

log = logging.getLogger(__name__)

# Messages one subscription may have waiting; a client further behind is cut off.
MAX_BUFFERED = 10_000


def sse_message(event: GatewayEvent) -> bytes:
    """One event as a Server-Sent Events message (its id is the event's)."""
    data = json.dumps(event, separators=(",", ":"))
    return f"id: {event['id']}\nevent: {event['type']}\ndata: {data}\n\n".encode()


def read_messages(runtime: Runtime, cursor: FeedCursor
                  ) -> tuple[list[tuple[FeedRow, bytes]], bool]:
    """The cursor's next events with their SSE messages, and whether more are waiting."""
    with runtime.reading() as conn:
        rows, more = cursor.poll(conn)
    url = runtime.settings.public_url
    return [(row, sse_message(event_feed.cloud_event(row, url))) for row in rows], more


class Subscription:
    """What one stream is waiting for, and the messages that came for it."""

    def __init__(self, where: FeedFilter) -> None:
        self.where = where
        self.messages: deque[tuple[int, bytes]] = deque()
        self.ready = asyncio.Event()
        self.overflowed = False

    def offer(self, row: FeedRow, message: bytes) -> None:
        """Keep the message if this stream's filter passes its event."""
        if not self.where.passes(row):
            return
        if len(self.messages) >= MAX_BUFFERED:
            self.overflowed = True
        else:
            self.messages.append((row["id"], message))
        self.ready.set()

    def take(self) -> list[tuple[int, bytes]]:
        """The messages waiting, as (event id, message), oldest first."""
        taken = list(self.messages)
        self.messages.clear()
        self.ready.clear()
        return taken


class EventHub:
    """Reads new events for this process's subscriptions (see module)."""

    def __init__(self, runtime: Runtime, polls: anyio.CapacityLimiter) -> None:
        self._runtime, self._polls = runtime, polls
        self._subscriptions: set[Subscription] = set()
        self._wake = asyncio.Event()
        self._cursor: FeedCursor | None = None  # set while the pump runs
        self._pump: asyncio.Task[None] | None = None  # held: the loop keeps only weak ones
        self._unhook: Callable[[], None] | None = None
        self._listening: threading.Event | None = None

    async def subscribe(self, where: FeedFilter) -> Subscription:
        """A subscription to every event that `where` passes and that commits from now
        on (the hub's cursor is placed before this returns)."""
        if self._cursor is None:
            cursor = await anyio.to_thread.run_sync(self._start, limiter=self._polls)
            if self._cursor is None:  # no other stream started the pump meanwhile
                self._cursor = cursor
                self._pump = asyncio.get_running_loop().create_task(self._run(cursor))
        subscription = Subscription(where)
        self._subscriptions.add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)

    def wake_all(self) -> None:
        """Wake every stream with nothing new (the server is stopping: each sees that,
        instead of every idle stream waking each second to look)."""
        for subscription in self._subscriptions:
            subscription.ready.set()

    async def _run(self, cursor: FeedCursor) -> None:
        loop = asyncio.get_running_loop()
        settings = self._runtime.settings

        def wake() -> None:  # from any thread
            loop.call_soon_threadsafe(self._wake.set)

        self._start_wakeups(wake)
        try:
            while self._subscriptions:
                self._wake.clear()
                try:
                    found, more = await anyio.to_thread.run_sync(
                        self._read, cursor, limiter=self._polls)
                except OperationalError as exc:  # the database away for a moment
                    log.warning("event hub: %s", exc)
                    found, more = [], False
                except Exception:  # the streams must outlive one bad read
                    log.exception("event hub read failed")
                    found, more = [], False
                for row, message in found:
                    for subscription in list(self._subscriptions):
                        subscription.offer(row, message)
                if not more:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(),
                                               settings.events_poll_seconds)
        finally:
            # In the same step as the loop's last check: a stream subscribing after
            # this starts a new pump.
            self._cursor = None
            self._stop_wakeups()

    def _start(self) -> FeedCursor:
        with self._runtime.reading() as conn:
            return FeedCursor.start(conn, FeedFilter(None, None), None,
                                    self._runtime.settings.events_late_commit_seconds)

    def _read(self, cursor: FeedCursor) -> tuple[list[tuple[FeedRow, bytes]], bool]:
        return read_messages(self._runtime, cursor)

    def _start_wakeups(self, wake: Callable[[], None]) -> None:
        self._unhook = event_signal.on_commit(wake)
        engine = self._runtime.engine
        if engine.dialect.name == "postgresql":
            stop = self._listening = threading.Event()
            threading.Thread(target=event_signal.listen, args=(engine, wake, stop),
                             name="gridgate-event-listener", daemon=True).start()

    def _stop_wakeups(self) -> None:
        if self._unhook is not None:
            self._unhook()
        if self._listening is not None:
            self._listening.set()
        self._unhook = self._listening = None
