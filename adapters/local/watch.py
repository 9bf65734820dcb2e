"""Runner exits, told the moment they happen: the local site's `on_change`.

A runner records its job's outcome and then exits, so its exit is when the job's status
changed for good. Each runner this process started, or saw running in a status pass (one
another gateway started before a restart), is watched through a pidfd, which poll()
reports readable once that very process has exited (no pid reuse can fool it, and it
works for processes that are not our children). One thread per watching adapter waits
on them all; it runs only while someone listens, and a runner that exits at once (its
job was claimed already) costs only a wake for nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable

from adapters.local.procs import ProcessId

log = logging.getLogger(__name__)

# Whether this kernel and Python have pidfds (Linux 5.3, Python 3.9).
AVAILABLE = hasattr(os, "pidfd_open")
# What `_Watching._open` says of a runner it cannot watch.
CANNOT = -1


class RunnerWatch:
    """Calls its listeners when a watched runner exits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self._watching: _Watching | None = None

    @property
    def active(self) -> bool:
        """True while someone listens (only then are runners watched)."""
        return self._watching is not None

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` from the watching thread whenever a watched runner exits;
        returns the function that stops it (the thread ends with its last listener)."""
        with self._lock:
            self._listeners.append(callback)
            if self._watching is None:
                self._watching = _Watching(self._tell)

        def remove() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)
                if not self._listeners and self._watching is not None:
                    self._watching.close()
                    self._watching = None
        return remove

    def watch(self, runner: ProcessId) -> None:
        """Tell the listeners when `runner` exits (nothing when nobody listens, when it
        has exited already, or without pidfds: the worker's cycle finds it then)."""
        watching = self._watching
        if watching is not None:
            watching.add(runner)

    def _tell(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener()
            except Exception:  # one listener's failure must not stop the watch
                log.exception("a runner-exit listener failed")


class _Watching:
    """The thread that waits on the runners' pidfds, and the runners handed to it."""

    def __init__(self, tell: Callable[[], None]) -> None:
        self._tell = tell
        self._lock = threading.Lock()
        self._added: list[ProcessId] = []
        self._closed = False
        self._seen: set[ProcessId] = set()
        # Writes here wake the thread: runners to add, or the close.
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="gridgate-local-runners",
                                        daemon=True)
        self._thread.start()

    def add(self, runner: ProcessId) -> None:
        with self._lock:
            # Each status pass names the runners under way again: only new ones wake us.
            if not self._closed and runner not in self._seen:
                self._seen.add(runner)
                self._added.append(runner)
                self._nudge()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._nudge()

    def _nudge(self) -> None:
        # Under the lock, before `_closed` is seen: the thread closes the pipe only after.
        with contextlib.suppress(BlockingIOError):  # full: a wake is pending anyway
            os.write(self._wake_w, b"x")

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        fds: dict[int, ProcessId] = {}
        try:
            while True:
                with self._lock:
                    if self._closed:
                        return
                    added, self._added = self._added, []
                exited = False
                for runner in added:
                    fd = self._open(runner)
                    if fd is None:  # it has exited already: its job's end may be unseen
                        self._forget(runner)
                        exited = True
                    elif fd == CANNOT:  # kept as seen: never tried again
                        continue
                    else:
                        fds[fd] = runner
                        poller.register(fd, select.POLLIN)
                if exited:
                    self._tell()
                    exited = False
                for fd, _ in poller.poll():
                    if fd == self._wake_r:
                        with contextlib.suppress(BlockingIOError):
                            while os.read(self._wake_r, 512):
                                pass
                        continue
                    poller.unregister(fd)
                    os.close(fd)
                    self._forget(fds.pop(fd))
                    exited = True
                if exited:  # all runners that exited meanwhile make one call
                    self._tell()
        except Exception:  # the worker's cycle still finds every end, only later
            log.exception("watching the local runners failed")
        finally:
            for fd in fds:
                os.close(fd)
            with self._lock:
                self._closed = True  # also when the thread failed: no write reaches the pipe
                os.close(self._wake_r)
                os.close(self._wake_w)

    def _forget(self, runner: ProcessId) -> None:
        with self._lock:
            self._seen.discard(runner)

    @staticmethod
    def _open(runner: ProcessId) -> int | None:
        """A pidfd of `runner`; None once it has exited; CANNOT when it cannot be watched
        (no pidfds, no file descriptors left): the worker's cycle finds its end then."""
        if not AVAILABLE:
            return CANNOT
        try:
            fd = os.pidfd_open(runner.pid)
        except ProcessLookupError:
            return None
        except OSError as exc:
            log.warning("cannot watch the local runner %d: %s", runner.pid, exc)
            return CANNOT
        # The pid may have been reused before the open: the pidfd is the runner's only if
        # the runner is still alive now that the pidfd holds its pid.
        if not runner.is_alive():
            os.close(fd)
            return None
        return fd
