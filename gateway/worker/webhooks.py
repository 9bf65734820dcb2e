"""Webhooks step: once per outbox pass, fan the new events out to the
subscriptions and send the deliveries that are due (gateway.services.webhooks.delivery
says why a crash at any point is safe). Sending happens outside any transaction."""

from __future__ import annotations

import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from gateway.db.base import utcnow
from gateway.services.webhooks import delivery as service
from gateway.services.webhooks.delivery import Attempt, Outgoing
from gateway.services.webhooks.targets import TargetRefused, post
from gateway.settings import Settings
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Subscriptions fanned out per unit of work, and deliveries leased per claim.
FAN_OUT_BATCH = 100
SEND_BATCH = 20
# Deliveries of one batch sent at the same time.
SEND_THREADS = 8
_rng = random.SystemRandom()


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
        outgoing = service.claim(session, settings, worker, at, SEND_BATCH)
    if not outgoing:
        return False
    # Claims hold one delivery per job and subscription (order per job), so the batch
    # may go out at once; a slow receiver then costs one timeout, not one per delivery.
    with ThreadPoolExecutor(max_workers=min(SEND_THREADS, len(outgoing)),
                            thread_name_prefix="gridgate-webhook") as pool:
        attempts = list(pool.map(lambda item: _send(settings, item), outgoing))
    # One unit for the batch: a crash before it commits sends the batch again, with the
    # same webhook-ids (at least once).
    with ctx.unit() as session:
        service.record(session, settings, worker, attempts, now or utcnow(), _rng)
    for attempt in attempts:
        if attempt.error:
            log.info("webhook delivery %d failed: %s", attempt.delivery_id, attempt.error)
    return True


def _send(settings: Settings, item: Outgoing) -> Attempt:
    """POST one delivery."""
    try:
        # The signature's time is the wall clock: receivers check it against theirs.
        answer = post(settings, item.url, item.body, item.headers(int(time.time())))
        return Attempt(item.delivery_id, answer, None)
    except TargetRefused as exc:
        return Attempt(item.delivery_id, None, f"refused: {exc}")
    except Exception as exc:  # any failure of the target is retried
        return Attempt(item.delivery_id, None, f"{type(exc).__name__}: {exc}")
