"""Sites that asked to be looked at now. An adapter with `change_wakes` (the local site:
a job's runner exited) tells the worker, which follows that site's jobs at once instead
of at its next cycle (`listen`); a site lane that did work asks the worker's loop for a
pass over the workflows and gates such work may open (`Wakes`).

Wakes are gathered until the loop takes them: any number between two takes make one
pass, so sites that keep telling cost at most one pass per `gap`.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable

from adapters.base import change_notifier
from gateway.services.sites.entry import SiteEntry


class Wakes:
    """Site names told by their adapters, and the stop, for a loop that waits on both."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._sites: set[str] = set()
        self._stopped = False

    def wake(self, site: str) -> None:
        with self._changed:
            self._sites.add(site)
            self._changed.notify_all()

    def stop(self) -> None:
        """End every wait now (the worker stops)."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def wait(self, timeout: float, *, early: bool = True) -> set[str]:
        """Wait `timeout` seconds, less when a wake comes (if `early`) or the stop; then
        take the sites woken so far (those of earlier waits included)."""
        end = time.monotonic() + timeout
        with self._changed:
            while not self._stopped and not (early and self._sites):
                left = end - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            taken, self._sites = self._sites, set()
            return taken


def listen(sites: Iterable[SiteEntry], tell: Callable[[str], None]) -> Callable[[], None]:
    """Have every adapter of these sites that can tell of changes call `tell` with its
    site's name; returns the function that stops them all."""
    stops: list[Callable[[], None]] = []
    for site in sites:
        adapters = [site.adapter, *(site.mapped or {}).values()]
        for adapter in {id(a): a for a in adapters}.values():
            notifier = change_notifier(adapter)
            if notifier is not None:
                stops.append(notifier.on_change(functools.partial(tell, site.name)))

    def unlisten() -> None:
        for stop in stops:
            stop()
    return unlisten
