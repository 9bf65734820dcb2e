"""Keep-alive connections to webhook targets, shared by the sending threads: a delivery
to a target takes an idle connection to the very address its check just allowed (so
the check still holds for every request), and gives it back once the answer was read
whole. Idle ones are dropped after `IDLE_SECONDS`, before a receiver would close them."""

from __future__ import annotations

import http.client
import threading
import time

IDLE_SECONDS = 30.0
# Idle connections kept per target and address: one per sending thread is plenty.
PER_KEY = 16

# (scheme, host, port, checked address, timeout)
Key = tuple[str, str, int, str, float]


class Connections:
    """Idle keep-alive connections by target and checked address."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self._idle: dict[Key, list[tuple[float, http.client.HTTPConnection]]] = {}
        self._lock = threading.Lock()
        self._idle_seconds = idle_seconds

    def take(self, key: Key) -> http.client.HTTPConnection | None:
        """An idle connection for `key`, or None."""
        stale = []
        found = None
        with self._lock:
            idle = self._idle.get(key, [])
            now = time.monotonic()
            while idle:
                since, conn = idle.pop()
                if now - since < self._idle_seconds:
                    found = conn
                    break
                stale.append(conn)
        for conn in stale:
            conn.close()
        return found

    def give(self, key: Key, conn: http.client.HTTPConnection) -> None:
        """Keep `conn` (its last answer read whole) for the next delivery to `key`."""
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < PER_KEY:
                idle.append((time.monotonic(), conn))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for _, conn in conns:
                conn.close()
