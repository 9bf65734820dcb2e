"""Webhooks step: once per cycle, after the sites' steps, fan the new events out to the
subscriptions and send the deliveries that are due (gateway.services.webhooks.delivery
says why a crash at any point is safe). Sending happens outside any transaction."""

from __future__ import annotations

import logging
import random
import time
from datetime import datetime

from gateway.db.base import utcnow
from gateway.services.webhooks import delivery as service
from gateway.services.webhooks.targets import Answer, TargetRefused, post
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Subscriptions fanned out per unit of work, and deliveries leased per claim.
FAN_OUT_BATCH = 100
SEND_BATCH = 20
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
    for item in outgoing:
        answer: Answer | None = None
        error: str | None = None
        try:
            # The signature's time is the wall clock: receivers check it against theirs.
            answer = post(settings, item.url, item.body, item.headers(int(time.time())))
        except TargetRefused as exc:
            error = f"refused: {exc}"
        except Exception as exc:  # any failure of the target is retried
            error = f"{type(exc).__name__}: {exc}"
        with ctx.unit() as session:
            service.record(session, settings, worker, item.delivery_id, answer, error,
                           now or utcnow(), _rng)
        if error:
            log.info("webhook delivery %d failed: %s", item.delivery_id, error)
    return bool(outgoing)
