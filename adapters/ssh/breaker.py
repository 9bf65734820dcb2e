"""Per-site reconnect policy: exponential backoff with jitter, then a circuit breaker.

After a failed connection attempt the next one waits a short, growing, jittered delay;
after `threshold` consecutive failures the circuit opens and calls fail fast for a
cooldown (also growing, jittered), naming the site, since when it is unreachable and when
the next attempt will be made. Once the wait is over exactly one caller tries (half-open);
success closes the circuit. Nothing here does I/O or holds a lock across I/O.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from adapters.transport import CircuitOpen, ConnectionFailed


@dataclass(frozen=True)
class Backoff:
    """Delay before retry number `attempt` (1-based): base * factor**(attempt-1), capped.

    "Equal jitter": half the delay is fixed, half is random, so retries from many gateway
    processes spread out but never come back immediately.
    """

    base: float = 0.5
    factor: float = 2.0
    cap: float = 30.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        exponent = max(0, attempt - 1)
        # Cap the exponent too: factor**exponent must not overflow on a long outage.
        full = min(self.cap, self.base * self.factor ** min(exponent, 64))
        return full / 2 + rng.uniform(0.0, full / 2)


@dataclass(frozen=True)
class BreakerState:
    """A snapshot, for status pages and `gridgate site check`."""

    site: str
    failures: int
    open: bool
    since: datetime | None
    retry_at: datetime | None
    last_error: str | None


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class CircuitBreaker:
    """Decides whether a connection attempt to one site may be made now."""

    def __init__(
        self,
        site: str,
        *,
        threshold: int = 3,
        backoff: Backoff = Backoff(base=0.5, factor=2.0, cap=30.0),
        cooldown: Backoff = Backoff(base=30.0, factor=2.0, cap=300.0),
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
    ) -> None:
        if threshold < 1:
            raise ValueError("threshold must be >= 1")
        self.site = site
        self.threshold = threshold
        self.backoff = backoff
        self.cooldown = cooldown
        self._clock = clock
        self._wall = wall_clock
        # Jitter spreads retries out; it needs no cryptographic randomness.
        self._rng = rng or random.Random()  # noqa: S311
        self._lock = threading.Lock()
        self._failures = 0
        self._since: float | None = None
        self._retry_at = 0.0
        self._last_error: str | None = None
        self._trial = False

    # --- the attempt protocol: before_attempt, then exactly one of the other three ---

    def before_attempt(self) -> None:
        """Return if an attempt may go ahead now; else raise CircuitOpen / ConnectionFailed."""
        with self._lock:
            if self._failures == 0:
                return
            if self._clock() < self._retry_at or self._trial:
                raise self._fail_fast()
            # Half-open: this caller makes the one trial; others fail fast meanwhile.
            self._trial = True

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._since = None
            self._retry_at = 0.0
            self._last_error = None
            self._trial = False

    def record_failure(self, error: str) -> float:
        """Count a failed connection attempt; returns the wait before the next one."""
        with self._lock:
            self._failures += 1
            if self._since is None:
                self._since = self._wall()
            if self._failures < self.threshold:
                wait = self.backoff.delay(self._failures, self._rng)
            else:
                wait = self.cooldown.delay(self._failures - self.threshold + 1, self._rng)
            self._retry_at = self._clock() + wait
            self._last_error = error
            self._trial = False
            return wait

    def release(self) -> None:
        """The attempt ended without telling anything about reachability (e.g. bad key)."""
        with self._lock:
            self._trial = False

    # --- reading ---

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._failures >= self.threshold

    def state(self) -> BreakerState:
        with self._lock:
            return BreakerState(
                site=self.site,
                failures=self._failures,
                open=self._failures >= self.threshold,
                since=_utc(self._since) if self._since is not None else None,
                retry_at=self._retry_wall() if self._failures else None,
                last_error=self._last_error,
            )

    def _retry_wall(self) -> datetime:
        # Gating uses the monotonic clock; people read wall-clock times.
        return _utc(self._wall() + max(0.0, self._retry_at - self._clock()))

    def _fail_fast(self) -> ConnectionFailed:
        since = _utc(self._since if self._since is not None else self._wall())
        retry_at = self._retry_wall()
        when = "retrying now" if self._trial else f"retrying at {_stamp(retry_at)}"
        if self._failures >= self.threshold:
            return CircuitOpen(
                f"site {self.site} unreachable since {_stamp(since)}, {when} "
                f"({self._failures} failed connection attempts; last: {self._last_error})",
                site=self.site,
                since=since,
                retry_at=retry_at,
            )
        return ConnectionFailed(
            f"site {self.site}: connection failed at {_stamp(since)}, {when} "
            f"(backing off after {self._failures} failed attempt(s); last: {self._last_error})",
            retry_at=retry_at,
        )
