"""Each site's steps on threads of their own, so that one slow or dead site never delays
another (issue 32), and a submission never waits behind its own site's status calls.

A site has two lanes: `send` (recover, submit, cancel: what the gateway sends to the
site) and `follow` (status, stage-out, settling: following its jobs to their end). A lane
runs a pass when kicked (by the worker's cycle, by an adapter that tells of a change, or
by itself after a pass that left more to do); kicks that come while it runs gather into
one more pass. Nothing waits for a lane: a site whose connection hangs until its timeout
holds its own lane only.

Two lanes of one site, or of two sites, may run at once: the steps already hold leases
in the database because any number of workers may run at once (gateway.services.lifecycle).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from gateway.services.sites.entry import SiteEntry

log = logging.getLogger(__name__)

SEND, FOLLOW = "send", "follow"
LANES = (SEND, FOLLOW)

# A pass of one lane at one site: True when it left work to do now.
LanePass = Callable[[SiteEntry, str], bool]


class Lane:
    """One lane of one site: a thread that runs `run_pass` whenever kicked."""

    def __init__(self, site: SiteEntry, lane: str, run_pass: LanePass,
                 on_busy: Callable[[str], None]) -> None:
        self.site = site
        self.lane = lane
        self._run_pass = run_pass
        self._on_busy = on_busy
        self._kicked = threading.Event()
        self._stopped = False
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name=f"gridgate-{site.name}-{lane}")

    def kick(self) -> None:
        self._kicked.set()

    def stop(self) -> None:
        self._stopped = True
        self._kicked.set()

    def _loop(self) -> None:
        while True:
            self._kicked.wait()
            if self._stopped:
                return
            self._kicked.clear()
            try:
                busy = self._run_pass(self.site, self.lane)
            except Exception:  # the lane must outlive any one bad pass
                log.exception("%s pass at %s failed", self.lane, self.site.name)
                busy = False
            if busy:
                self._kicked.set()  # more to do at this site now
                self._on_busy(self.site.name)


class SiteLanes:
    """Every site's lanes, started at once and stopped together."""

    def __init__(self, sites: Iterable[SiteEntry], run_pass: LanePass,
                 on_busy: Callable[[str], None]) -> None:
        self._lanes = {(site.name, lane): Lane(site, lane, run_pass, on_busy)
                       for site in sites for lane in LANES}
        for lane in self._lanes.values():
            lane.thread.start()

    def kick_all(self, lane: str | None = None) -> None:
        """Kick every site's lanes, or every site's lane of this name."""
        for (_, name), found in self._lanes.items():
            if lane is None or name == lane:
                found.kick()

    def kick(self, site: str, lane: str) -> None:
        found = self._lanes.get((site, lane))
        if found is not None:
            found.kick()

    def stop(self, timeout: float) -> None:
        """Stop every lane; wait up to `timeout` seconds in all for passes under way."""
        for lane in self._lanes.values():
            lane.stop()
        end = time.monotonic() + timeout
        for lane in self._lanes.values():
            lane.thread.join(timeout=max(0.0, end - time.monotonic()))
