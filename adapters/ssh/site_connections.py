"""How many connections the gateway keeps open to one site: a cap on the idle ones.

A community site needs one connection; a site where each researcher logs in as their
own account (mapped or certificate mode) needs one per account, and with hundreds of
researchers active, keeping each open (one sshd process at the site apiece) would hold
hundreds. So every account of a site shares one `SiteConnections`: each command marks
its account's transport as the most recently used, and when that makes more than `cap`
transports known, the least recently used ones whose connection carries nothing are
closed (the next command of such an account opens a new connection: one handshake,
and with certificates a new certificate).

The bound: open connections to a site <= `cap` + those busy at that moment (carrying a
command, or opening channels ahead for the next): at most the threads that use the site
at once, each with the connection it just used.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol


class Idle(Protocol):
    def close_if_idle(self) -> bool:
        """Close the connection if it carries nothing; whether none is open now."""
        ...


class SiteConnections:
    """The accounts' transports of one site, least recently used first."""

    def __init__(self, site: str, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"{site}: the idle connection cap must be >= 1")
        self.site = site
        self.cap = cap
        self._lock = threading.Lock()
        self._used: OrderedDict[Idle, None] = OrderedDict()

    def used(self, owner: Idle) -> None:
        """`owner` is about to run a command: the most recently used; close the least
        recently used idle others past the cap."""
        with self._lock:
            self._used[owner] = None
            self._used.move_to_end(owner)
            excess = len(self._used) - self.cap
            if excess <= 0:
                return
            oldest = [other for other in self._used if other is not owner]
        # Closing joins paramiko's thread: outside the lock, so other accounts go on.
        for other in oldest:
            if excess <= 0:
                break
            if other.close_if_idle():
                with self._lock:
                    self._used.pop(other, None)
                excess -= 1

    def tracked(self) -> int:
        """Transports known (connected, or not yet found closed)."""
        with self._lock:
            return len(self._used)
