"""Webhooks step: once per outbox pass, fan the new events out to the
subscriptions and send the deliveries that are due (gateway.services.webhooks.delivery
says why a crash at any point is safe). Sending happens outside any transaction, while a
thread renews the lease of what is being sent."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from gateway.db.base import utcnow
from gateway.services.webhooks import delivery as service
from gateway.services.webhooks.connections import Connections
from gateway.services.webhooks.delivery import Attempt, Outgoing
from gateway.services.webhooks.targets import TargetRefused, post
from gateway.settings import Settings
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Subscriptions fanned out per unit of work; runs leased per claim, and deliveries of one
# (subscription, subject) per run, sent one after the other.
FAN_OUT_BATCH = 100
SEND_BATCH = 64
RUN = 16
# Runs of one batch sent at the same time.
SEND_THREADS = 8
_rng = random.SystemRandom()
# Kept-alive connections to targets, shared by every pass of this process.
_connections = Connections()


def deliver_webhooks(ctx: StepContext, now: datetime | None = None) -> bool:
    """True when deliveries were sent (more may be due at once)."""
    at = now or utcnow()
    after: str | None = None
    while True:
        with ctx.unit() as session:
            _, after = service.fan_out(session, FAN_OUT_BATCH, after)
        if after is None:
            break
    settings, worker = ctx.rt.settings, ctx.holder.worker_id
    with ctx.unit() as session:
        runs = service.claim(session, settings, worker, at, SEND_BATCH, RUN)
    if not runs:
        return False
    lost = threading.Event()
    silent: set[str] = set()
    # Runs hold different (subscription, subject)s, so they may go out at once; a target
    # that does not answer costs one timeout per thread, not one per run or delivery.
    with _renewing(ctx, [item.delivery_id for run in runs for item in run], at, lost), \
            ThreadPoolExecutor(max_workers=min(SEND_THREADS, len(runs)),
                               thread_name_prefix="gridgate-webhook") as pool:
        sent = list(pool.map(lambda run: _send_run(settings, run, lost, silent), runs))
    attempts = [attempt for done, _ in sent for attempt in done]
    unsent = [delivery_id for _, rest in sent for delivery_id in rest]
    # One unit for the batch: a crash before it commits sends the batch again, with the
    # same webhook-ids (at least once).
    with ctx.unit() as session:
        service.record(session, settings, worker, attempts, now or utcnow(), _rng, unsent)
    for attempt in attempts:
        if attempt.error:
            log.info("webhook delivery %d failed: %s", attempt.delivery_id, attempt.error)
    return True


def close_connections() -> None:
    """Close the kept-alive connections to targets (when the worker stops)."""
    _connections.close()


@contextmanager
def _renewing(ctx: StepContext, delivery_ids: Sequence[int], at: datetime,
              lost: threading.Event) -> Iterator[None]:
    """Renew the lease of the deliveries every third of it until the block ends; set
    `lost` when it could not (then no more of them are sent)."""
    done = threading.Event()
    every = ctx.rt.settings.webhook_lease_seconds / 3
    started = time.monotonic()

    def renew() -> None:
        while not done.wait(every):
            # On the claim's clock (`at`: tests pass their own), moved on as time passed.
            clock = at + timedelta(seconds=time.monotonic() - started)
            try:
                with ctx.unit() as session:
                    held = service.renew(session, ctx.rt.settings, ctx.holder.worker_id,
                                         delivery_ids, clock)
            except Exception:  # the database is away: the lease may run out
                log.exception("renewing webhook leases failed")
                held = False
            if not held:
                lost.set()
                return

    thread = threading.Thread(target=renew, name="gridgate-webhook-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _send_run(settings: Settings, run: list[Outgoing], lost: threading.Event,
              silent: set[str]) -> tuple[list[Attempt], list[int]]:
    """Send a run in order, stopping at the first failure: the attempts made, and the
    deliveries left unsent (they stay behind the failed one). A target in `silent`
    (it did not answer another delivery of this batch) is not tried again: that
    counts as a failure of the same kind."""
    attempts: list[Attempt] = []
    for index, item in enumerate(run):
        if lost.is_set():
            return attempts, [later.delivery_id for later in run[index:]]
        where = urlsplit(item.url).netloc.lower()
        if where in silent:
            attempt = Attempt(item.delivery_id, item.webhook_id, None,
                              f"not tried: {where} did not answer another delivery just now")
        else:
            attempt = _send(settings, item)
            if attempt.answer is None:
                silent.add(where)  # set.add is atomic: the threads share it
        attempts.append(attempt)
        if attempt.error or attempt.answer is None or not 200 <= attempt.answer.status < 300:
            return attempts, [later.delivery_id for later in run[index + 1:]]
    return attempts, []


def _send(settings: Settings, item: Outgoing) -> Attempt:
    """POST one delivery."""
    try:
        # The signature's time is the wall clock: receivers check it against theirs.
        answer = post(settings, item.url, item.body, item.headers(int(time.time())),
                      connections=_connections)
        return Attempt(item.delivery_id, item.webhook_id, answer, None)
    except TargetRefused as exc:
        return Attempt(item.delivery_id, item.webhook_id, None, f"refused: {exc}")
    except Exception as exc:  # any failure of the target is retried
        return Attempt(item.delivery_id, item.webhook_id, None, f"{type(exc).__name__}: {exc}")
