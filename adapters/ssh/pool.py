"""Shared transports: one per (host, port, user), one circuit breaker per site.

The pool only hands out objects; transports connect lazily on first use, so nothing here
does network I/O and its lock is never held across it. Jump hosts are pooled like any
other target, so several sites behind one bastion share its connection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from adapters.ssh.breaker import BreakerState, CircuitBreaker
from adapters.ssh.target import SshTarget


class Closeable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closeable)


class TransportPool(Generic[T]):
    """Target -> transport, built by `factory(target, breaker, jump_transport)`.

    The factory must not do I/O. A target whose settings changed (same host, port and
    user, other keys or timeouts) gets a new transport; the old one keeps serving whoever
    holds it (e.g. as their jump host) and is closed with the pool.
    """

    def __init__(
        self,
        factory: Callable[[SshTarget, CircuitBreaker, T | None], T],
        *,
        breaker_factory: Callable[[str], CircuitBreaker] = CircuitBreaker,
    ) -> None:
        self._factory = factory
        self._breaker_factory = breaker_factory
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, str], tuple[SshTarget, T]] = {}
        self._retired: list[T] = []
        self._breakers: dict[str, CircuitBreaker] = {}

    def get(self, target: SshTarget) -> T:
        """The transport for this target, created on first request."""
        jump = self.get(target.jump) if target.jump is not None else None
        with self._lock:
            entry = self._entries.get(target.pool_key)
            if entry is not None and entry[0] == target:
                return entry[1]
            if entry is not None:
                self._retired.append(entry[1])
            transport = self._factory(target, self._breaker_locked(target.label), jump)
            self._entries[target.pool_key] = (target, transport)
        return transport

    def breaker(self, site: str) -> CircuitBreaker:
        """The breaker shared by every account of `site` (created if new)."""
        with self._lock:
            return self._breaker_locked(site)

    def states(self) -> list[BreakerState]:
        with self._lock:
            breakers = list(self._breakers.values())
        return [b.state() for b in breakers]

    def close(self) -> None:
        """Close every transport; the pool can be used again afterwards."""
        with self._lock:
            transports = [transport for _, transport in self._entries.values()]
            transports += self._retired
            self._entries.clear()
            self._retired.clear()
        for transport in transports:
            transport.close()

    def _breaker_locked(self, site: str) -> CircuitBreaker:
        breaker = self._breakers.get(site)
        if breaker is None:
            breaker = self._breakers[site] = self._breaker_factory(site)
        return breaker
