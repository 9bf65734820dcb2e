"""Ctrl-C that lands inside httpx's connection pool still ends the command.

A signal handler runs after any call returns, so a KeyboardInterrupt can be raised right
after httpcore's pool took its lock (`ThreadLock.__enter__` has acquired, and its `with`
has not begun): the lock stays held, and closing the pool waits for it forever. CI saw
`gridgate submit --input BIG` hang after Ctrl-C this way. The interrupt is raised at that
exact line by a trace function: no signal timing, no sleep.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import httpcore._synchronization as httpcore_sync
import pytest

from gateway.cli.errors import Interrupted
from gateway.cli.state import CliState

_ENTER = httpcore_sync.ThreadLock.__enter__.__code__
_AFTER_ACQUIRE = _ENTER.co_firstlineno + 2  # `return self`, after `self._lock.acquire()`


def _interrupt_after_the_pools_acquire(frame: FrameType, event: str, arg: Any) -> Any:
    if frame.f_code is not _ENTER:
        return None

    def line(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno == _AFTER_ACQUIRE:
            sys.settrace(None)
            raise KeyboardInterrupt
        return line
    return line


@pytest.mark.parametrize("raised", [KeyboardInterrupt, Interrupted])
def test_a_ctrl_c_inside_the_connection_pool_leaves_the_client_without_waiting(
        raised: type[BaseException]) -> None:
    seen: list[BaseException] = []
    locks: list[bool] = []

    def command() -> None:
        try:
            with CliState("http://127.0.0.1:9").client(authenticated=False) as client:
                pool = client._http._transport._pool  # type: ignore[attr-defined]
                sys.settrace(_interrupt_after_the_pools_acquire)
                try:
                    client.list_uploads()
                except KeyboardInterrupt:
                    locks.append(pool._optional_thread_lock._lock.locked())
                    if raised is Interrupted:  # as `send_file` turns it into a message
                        raise Interrupted("Stopped.") from None
                    raise
        except BaseException as exc:  # the test reads what ended it
            seen.append(exc)

    thread = threading.Thread(target=command, daemon=True)
    thread.start()
    thread.join(timeout=120)  # a hang, not a speed: it returns at once or never
    assert not thread.is_alive(), "leaving the client waited for the pool's lock"
    assert locks == [True], "the interrupt did not land inside the pool's lock"
    assert [type(e) for e in seen] == [raised]


def test_leaving_the_client_otherwise_closes_it() -> None:
    with CliState("http://127.0.0.1:9").client(authenticated=False) as client:
        pass
    assert client._http.is_closed
    with (pytest.raises(ValueError),
          CliState("http://127.0.0.1:9").client(authenticated=False) as failing):
        raise ValueError
    assert failing._http.is_closed
