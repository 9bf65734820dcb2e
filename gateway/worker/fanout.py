"""Several calls to one site at once: each mostly waits on the site (its pooled
connection carries one channel per command), so a few threads cut a step's time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

R = TypeVar("R")


def fan_out(calls: Sequence[Callable[[], R]], threads: int, name: str) -> list[R]:
    """Each call's result, in order. Up to `threads` at once (threads named `name`):
    every call finishes before the first error is raised; with one thread (or one call),
    one after another, the first error stopping the rest."""
    threads = min(threads, len(calls))
    if threads <= 1:
        return [call() for call in calls]
    with ThreadPoolExecutor(threads, thread_name_prefix=name) as pool:
        futures = [pool.submit(call) for call in calls]
    return [future.result() for future in futures]
