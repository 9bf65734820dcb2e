"""Staging progress as events (`org.gridgate.job.staging`, gateway.schemas.events).

While a file moves, its transfer's progress callback asks a Throttle before anything
else: at most one event per `staging_progress_seconds`, each its own small unit of work
written from the thread that transfers. An event that cannot be written is logged; it
never fails the staging. A file's last event is not written here: an input's `done` goes
with the job's hand-over to the site (its QUEUED change), a final failure's with the
job's FAILED change, so no event says done of a staging the database does not record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from adapters.transport import Progress
from gateway.db.base import utcnow
from gateway.repositories.events import facts
from gateway.repositories.events.facts import NewFact
from gateway.schemas.events import JOB_STAGING_TYPE
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

Direction = Literal["in", "out"]
# Commits events in a unit of work of their own.
Write = Callable[[Sequence[NewFact]], None]


class Throttle:
    """Whether a report is due: at most one per `interval` seconds of `clock`, counted
    from when the throttle was made (a transfer shorter than that reports only its end).
    Pure: the clock is given, so tests drive it."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._last = clock()

    def due(self) -> bool:
        now = self._clock()
        if now - self._last < self._interval:
            return False
        self._last = now
        return True


@dataclass
class _File:
    path: str
    total: int | None
    done: int = 0


class StagingEvents:
    """The staging events of one job's files, moved one after another by one thread."""

    def __init__(self, job_id: str, actor: str, interval: float, write: Write, *,
                 direction: Direction = "in",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.job_id, self.actor, self.direction = job_id, actor, direction
        self._interval, self._write, self._clock = interval, write, clock
        self._current: _File | None = None
        self._done: list[NewFact] = []

    def start(self, path: str, total: int | None) -> Progress:
        """`path` (the user's name for it) begins to move: the transfer's callback."""
        file = self._current = _File(path, total)
        throttle = Throttle(self._interval, self._clock)

        def progress(done: int) -> None:
            file.done = done
            if throttle.due():  # the clock first: most calls end here, cheaply
                self.write_quietly([self._fact(file, done=False)])

        return progress

    def finished(self) -> None:
        """The file being moved is in place: its done event waits for the commit that
        records it (`done_events`)."""
        file = self._current
        assert file is not None, "finished() without start()"
        if file.total is not None:
            file.done = file.total  # a cache hit sends nothing, yet all of it is there
        self._done.append(self._fact(file, done=True))
        self._current = None

    @property
    def done_events(self) -> tuple[NewFact, ...]:
        return tuple(self._done)

    def failed(self, error: str) -> list[NewFact]:
        """The event of the file that was moving when `error` stopped the staging (none
        when it stopped between files)."""
        file, self._current = self._current, None
        return [] if file is None else [self._fact(file, done=False, error=error)]

    def write_quietly(self, events: Sequence[NewFact]) -> None:
        """Write `events` in their own unit of work; a failure is logged, not raised."""
        if not events:
            return
        try:
            self._write(events)
        except Exception:  # an event is never worth a failed staging
            log.warning("job %s: a staging event was not recorded", self.job_id,
                        exc_info=True)

    def _fact(self, file: _File, *, done: bool, error: str | None = None) -> NewFact:
        return NewFact(JOB_STAGING_TYPE, utcnow(), self.actor, job_id=self.job_id, data={
            "direction": self.direction, "path": file.path, "bytes_done": file.done,
            "bytes_total": file.total, "done": done, "error": error})


def staging_events(ctx: StepContext, job_id: str, *, direction: Direction = "in"
                   ) -> StagingEvents:
    """The job's staging events, each progress event committed in a unit of `ctx`."""

    def write(events: Sequence[NewFact]) -> None:
        with ctx.unit() as session:
            facts.add_all(session, events)

    return StagingEvents(job_id, ctx.holder.actor, ctx.rt.settings.staging_progress_seconds,
                         write, direction=direction)
