"""The worker's loop: it only schedules steps, each in gateway/worker/ over the lifecycle
services (gateway.services.lifecycle), which own leases and transitions.

A cycle advances workflows first (gateway.worker.workflows: steps whose producers
completed are opened, failures retried or their descendants skipped), then opens gates
(gateway.worker.gates: jobs whose dependencies are satisfied,
array tasks their throttle has room for), then routes, once for all sites
(gateway.worker.route: one routing pass gives the pending `site: auto` jobs their sites),
then runs each site's steps: submission (recover, claim and submit), cancels, polling
and stage-out. In the long-running loop (`Worker.run`) each site's steps run on lanes of
their own (gateway.worker.lanes), which the cycle kicks and never waits for: a slow or
dead site delays no other, and a submission never waits behind its site's status calls.
Between cycles, a site whose adapter tells that a job of it may have ended (the local
site: its runner exited) has its jobs followed at once (gateway.worker.wakes).
The outbox of events (webhooks and job mail: gateway.worker.outbox) is sent by a thread
of its own, woken by this process's commits, so a receiver or relay slow to answer never
holds back the sites.

Any number of workers may run against one PostgreSQL database. Each step is one or
more units of work committed at its end; what makes a crash between any two of them
safe is said where it is kept: routing in gateway.services.routing.placement, claims and leases
in gateway.services.lifecycle, adoption by tag in gateway.worker.submission.submit, cancels in
gateway.worker.cancel, charges in gateway.services.money.settlement.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from adapters.errors import AdapterError, CredentialsRefused
from gateway.repositories.events import signal as event_signal
from gateway.runtime import Runtime, build_runtime
from gateway.services.sites.entry import SiteEntry
from gateway.settings import Settings
from gateway.worker.cancel import send_cancels
from gateway.worker.context import SiteStep, StepContext
from gateway.worker.failover import fail_over_stranded
from gateway.worker.gates import open_gates
from gateway.worker.lanes import FOLLOW, SEND, SiteLanes
from gateway.worker.outbox.mail import send_mail
from gateway.worker.outbox.webhooks import close_connections, deliver_webhooks
from gateway.worker.periodic.audit_sequencer import AuditSequencer
from gateway.worker.periodic.housekeeping import Housekeeping
from gateway.worker.periodic.prediction_refresh import PredictionRefresh
from gateway.worker.poll import poll
from gateway.worker.route import route_jobs
from gateway.worker.settle import settle, settle_unrun
from gateway.worker.site_health import DOWN, UP, SiteHealth
from gateway.worker.staging.site_caches import SiteCachePruning
from gateway.worker.staging.stage_out import stage_outs
from gateway.worker.submission.submit import submit_accepted, submit_recovered
from gateway.worker.wakes import Wakes, listen
from gateway.worker.workflows import advance_workflows

log = logging.getLogger(__name__)

# One cycle's schedule at each site, in order: (name, step, whether work done there
# means another pass should follow at once, the lane it runs on).
SITE_STEPS: tuple[tuple[str, SiteStep, bool, str], ...] = (
    ("recover", submit_recovered, True, SEND),  # adopt or resubmit what a dead worker left
    ("submit", submit_accepted, True, SEND),  # claim, stage in, submit
    ("cancel", send_cancels, False, SEND),
    ("poll", poll, False, FOLLOW),
    ("stage-out", stage_outs, True, FOLLOW),
    ("settle", settle, False, FOLLOW),  # finished jobs' liens -> charges (when the bank is on)
)  # and each worker's own: pruning the site's staging caches now and then (Worker.__init__)
# The shortest time between two woken passes over workflows and gates: sites that keep
# telling of changes cost no more than one per this.
WAKE_GAP_SECONDS = 0.05
# At most this many sites' steps at once in `run_once` (each on a thread of the pool).
PARALLEL_SITES = 16


class Worker:
    """One worker process's loop over every site."""

    def __init__(self, runtime: Runtime, worker_id: str | None = None) -> None:
        self.rt = runtime
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.ctx = StepContext.of(runtime, self.id)
        self.cache_pruning = SiteCachePruning()
        self.site_steps = (*SITE_STEPS,
                           ("prune-caches", self.cache_pruning.step, False, FOLLOW))
        self.health = SiteHealth(self.ctx)
        self.predictions = PredictionRefresh(self.ctx)
        self.housekeeping = Housekeeping(self.ctx)
        self.audit = AuditSequencer(self.ctx)

    def run(self, stop: threading.Event) -> None:
        """Cycle until `stop` is set: the steps over all sites here, each site's own on its
        lanes (gateway.worker.lanes). Sleep between cycles only when there was nothing to
        do, and then wake for a site whose adapter tells of a change or a lane that did
        work (gateway.worker.wakes). The outbox (webhooks, mail) goes on a thread of its
        own: a receiver or relay that hangs until its timeout must not hold back the sites."""
        log.info("worker %s started", self.id)
        outbox_wake = threading.Event()
        outbox = threading.Thread(target=self._run_outbox, args=(stop, outbox_wake),
                                  daemon=True, name="gridgate-outbox")
        outbox.start()
        wakes = Wakes()
        lanes = SiteLanes(self.rt.sites, self.run_site, wakes.wake)
        unlisten = listen(self.rt.sites, functools.partial(lanes.kick, lane=FOLLOW))
        # The stop ends every wait at once, however long their poll.
        threading.Thread(target=_stop_waits, args=(stop, wakes, outbox_wake), daemon=True,
                         name="gridgate-worker-stop").start()
        try:
            self._cycle(stop, wakes, lanes)
        finally:
            unlisten()
            wakes.stop()
            lanes.stop(timeout=60)
            outbox.join(timeout=60)
            close_connections()

    def _cycle(self, stop: threading.Event, wakes: Wakes, lanes: SiteLanes) -> None:
        """The steps over all sites every `worker_poll_seconds`, each followed by a kick of
        every lane; at once again after one that did work, kicking only the send lanes
        (what it routed or opened), so that busy cycles do not ask every site its
        statuses. Between cycles, a pass over workflows and gates for the lanes that did
        work, WAKE_GAP_SECONDS apart at the closest: their wakes gather into one."""
        poll_seconds = self.rt.settings.worker_poll_seconds
        next_cycle = next_full = time.monotonic()
        last_pass = -WAKE_GAP_SECONDS
        woken = False
        while not stop.is_set():
            due = min(next_cycle, last_pass + WAKE_GAP_SECONDS) if woken else next_cycle
            woken |= bool(wakes.wait(max(0.0, due - time.monotonic()), early=not woken))
            if stop.is_set():
                return
            now = time.monotonic()
            if now >= next_cycle:
                woken = False  # the cycle passes over workflows and gates too
                busy = _survive(self.run_steps_over_all_sites)
                if now >= next_full:
                    lanes.kick_all()
                    next_full = now + poll_seconds
                else:
                    lanes.kick_all(SEND)
                next_cycle = time.monotonic() if busy else next_full
            elif woken and now >= last_pass + WAKE_GAP_SECONDS:
                woken, last_pass = False, now
                if _survive(self.advance):
                    next_cycle = time.monotonic()

    def run_once(self, *, outbox: bool = True) -> bool:
        """One cycle over all sites (and the outbox, unless `outbox` is False), the sites'
        steps at once across sites and waited for. True when it did work that calls for
        another now."""
        busy = self.run_steps_over_all_sites()
        sites = list(self.rt.sites)
        if len(sites) == 1:
            busy |= self.run_site(sites[0])
        elif sites:
            with ThreadPoolExecutor(min(PARALLEL_SITES, len(sites)),
                                    thread_name_prefix="gridgate-site") as pool:
                busy |= any(list(pool.map(self.run_site, sites)))
        if outbox:
            busy |= self.send_outbox()  # after the sites: their changes go out now
        return busy

    def run_steps_over_all_sites(self) -> bool:
        """The steps that look at every site at once: housekeeping, the audit sequencer,
        workflows and gates, routing, failover, settling what never ran. True when they
        did work that calls for another cycle now."""
        self.housekeeping.run()
        self.audit.run()
        busy = self.advance()
        busy |= route_jobs(self.ctx, self.health, self.predictions)
        busy |= fail_over_stranded(self.ctx)
        settle_unrun(self.ctx)
        return busy

    def advance(self) -> bool:
        """Open the workflow steps whose producers completed, then the jobs whose
        dependencies are satisfied (and array tasks their throttle has room for)."""
        busy = advance_workflows(self.ctx)
        busy |= open_gates(self.ctx)
        return busy

    def send_outbox(self) -> bool:
        """Deliver what the events outbox owes: webhooks, then job mail. True when more
        may be due at once."""
        busy = deliver_webhooks(self.ctx)
        busy |= send_mail(self.ctx)
        return busy

    def _run_outbox(self, stop: threading.Event, wake: threading.Event) -> None:
        # Woken at once by a commit that wrote events in this process (this worker's own
        # changes) and by the stop; events from other processes are found at the next poll.
        unhook = event_signal.on_commit(wake.set)
        try:
            while not stop.is_set():
                wake.clear()
                try:
                    busy = self.send_outbox()
                except Exception:  # the thread must outlive any one bad pass
                    log.exception("outbox pass failed")
                    busy = False
                if not busy:
                    wake.wait(self.rt.settings.worker_poll_seconds)
        finally:
            unhook()

    def run_site(self, site: SiteEntry, lane: str | None = None) -> bool:
        """This site's steps (those of one lane, or all); True when one left work to do now."""
        busy = reached = False
        try:
            for _, step, hurries, on_lane in self.site_steps:
                if lane is not None and on_lane != lane:
                    continue
                worked = step(self.ctx, site)
                reached |= worked
                busy |= worked and hurries
        except CredentialsRefused as exc:
            # One user's trouble (no certificate for them): the site is up for the others.
            log.error("site %s: %s", site.name, exc)
            return busy
        except AdapterError as exc:
            # One site's trouble never stops the cycle for the others. Final errors
            # (a changed host key, a refused login) keep the site down until fixed.
            log.log(logging.WARNING if exc.transient else logging.ERROR,
                    "site %s unavailable: %s", site.name, exc)
            self.health.mark(site, DOWN, exc.message)
            return busy
        # Up only when this cycle reached the site: an idle cycle proves nothing, and
        # must not clear a final error (a changed host key) it never retried.
        if reached:
            self.health.mark(site, UP, None)
        return busy


def _survive(step: Callable[[], bool]) -> bool:
    """What `step` returns; False when it failed (logged): the loop outlives any bad cycle."""
    try:
        return step()
    except Exception:
        log.exception("worker cycle failed")
        return False


def _stop_waits(stop: threading.Event, wakes: Wakes,
                outbox_wake: threading.Event) -> None:
    stop.wait()
    wakes.stop()
    outbox_wake.set()


def run_worker(settings: Settings, stop: threading.Event) -> None:
    """Run one standalone worker until `stop` is set (what `gridgate worker` calls)."""
    runtime = build_runtime(settings)
    try:
        Worker(runtime).run(stop)
    finally:
        runtime.close()
