"""Webhook deliveries, driven by the worker (gateway.worker.outbox.webhooks).

Fan-out: each subscription keeps a cursor, the highest event id it has looked at, and
turns the events its owner may read (the event stream's rule, read from the owner's
row at fan-out time) into one delivery row each. The (subscription, event) pair is
unique, and the ids just below the cursor are looked at again, so an event whose
transaction committed after a higher id was read still gets its delivery, once. A
worker fans out a subscription only while it holds its row lock (skipped by others).

Sending: a worker leases due deliveries (skipping rows others are taking), commits,
sends, then records the answers. The lease is short (`webhook_lease_seconds`) and
renewed while the worker sends, so a crash between sending and recording holds them
only that long; then they are sent again with the same `webhook-id` (at least once).
Only the first pending delivery of a (subscription, subject) is due, so one job's (or
site's, or allocation's) events go out in id order; a claim takes it with the pending
ones right after it (a run), sent one after the other, each only once the one before
was answered 2xx. A failure is retried with exponential back-off and jitter (the rest
of its run is given back, still behind it), and after `webhook_retry_seconds` of
failures the subscription is disabled, saying why.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.auth.project_access import PI_ROLE
from gateway.db.webhook_models import Webhook, WebhookDelivery
from gateway.domain.principal import Principal
from gateway.repositories import webhooks as repo
from gateway.repositories.events import feed as events
from gateway.services.events.feed import cloud_event
from gateway.services.jobs.queries import sees_all
from gateway.services.webhooks import signing
from gateway.services.webhooks.subscriptions import message_id
from gateway.services.webhooks.targets import Answer
from gateway.settings import Settings

# Ids below a subscription's cursor looked at again for late commits.
LOOKBACK_IDS = 1000
# Events one subscription fans out per pass.
PAGE = 500
# The longest subject a delivery keeps (a job id's length).
SUBJECT_CHARS = 36
# A target's answer kept as the delivery's `last_error`, at most.
ERROR_CHARS = 300


@dataclass(frozen=True)
class Outgoing:
    """A leased delivery, ready to send."""

    delivery_id: int
    webhook_id: str
    url: str
    body: bytes
    message_id: str
    secret: str

    def headers(self, timestamp: int) -> dict[str, str]:
        return {"Content-Type": "application/cloudevents+json",
                "User-Agent": "gridgate-webhooks",
                **signing.headers(self.secret, self.message_id, timestamp, self.body)}


def fan_out(session: Session, limit: int, after: str | None) -> tuple[int, str | None]:
    """Fan out up to `limit` subscriptions (ids above `after`): the deliveries made, and
    the last subscription id looked at (None when there were no more)."""
    conn = session.connection()
    top = events.last_id(conn)
    made = 0
    locked = repo.lock_enabled(session, limit, after)
    for hook, roles, owner_disabled in locked:
        made += _fan_out_one(session, hook, roles, owner_disabled, top)
    return made, (locked[-1][0].id if len(locked) == limit else None)


def _fan_out_one(session: Session, hook: Webhook, roles: list[str], owner_disabled: bool,
                 top: int) -> int:
    up_to = min(top, hook.cursor + PAGE)
    low = max(hook.floor, hook.cursor - LOOKBACK_IDS)
    ids: list[int] = []
    if not owner_disabled and up_to > low:
        reader = Principal(hook.owner_id, "", "", roles=frozenset(roles))
        owner = None if sees_all(reader) else hook.owner_id
        conn = session.connection()
        pi_of = () if owner is None else events.projects_with_role(conn, owner, PI_ROLE)
        where = events.FeedFilter(owner, tuple(hook.job_ids) if hook.job_ids else None,
                                  types=tuple(hook.types) or None, pi_projects=pi_of)
        visible = events.visible_ids(conn, where, low, up_to)
        done = repo.fanned_ids(session, hook.id, low, up_to)
        ids = [i for i in visible if i not in done]
    # One statement, not a row object per delivery: a busy gateway makes many.
    made = repo.add_pending(session, hook.id, ids, SUBJECT_CHARS) if ids else 0
    hook.cursor = max(hook.cursor, up_to)
    return made


def claim(session: Session, settings: Settings, worker: str, now: datetime,
          heads: int, run: int = 1) -> list[list[Outgoing]]:
    """Lease to `worker`, for `webhook_lease_seconds` (renewed while it sends), up to
    `heads` runs of due deliveries: a (subscription, subject)'s first pending delivery
    and up to `run` - 1 after it, to be sent in order, each only after the one before
    was answered 2xx."""
    until = now + timedelta(seconds=settings.webhook_lease_seconds)
    runs = repo.claim_due(session, now, heads, run, worker, until)
    if not runs:
        return []
    conn = session.connection()
    found = [delivery for claimed in runs for delivery in claimed]
    by_id = {row["id"]: row for row in events.rows(conn, [d.event_id for d in found])}
    targets = repo.targets(session, list({d.webhook_id for d in found}))
    out = []
    for claimed in runs:
        batch = []
        for delivery in claimed:
            # A delivery's subscription is deleted with it, and its rows are locked now.
            url, secret = targets[delivery.webhook_id]
            # The very document the event stream sends (gateway.services.events.feed).
            document = cloud_event(by_id[delivery.event_id], settings.public_url)
            body = json.dumps(document, separators=(",", ":")).encode()
            batch.append(Outgoing(delivery.id, delivery.webhook_id, url, body,
                                  message_id(delivery), secret))
        out.append(batch)
    return out


def renew(session: Session, settings: Settings, worker: str, delivery_ids: Sequence[int],
          now: datetime) -> bool:
    """Extend `worker`'s lease of the deliveries it is sending; False when it lost one
    (then it must send no more of them: another worker may be sending them)."""
    until = now + timedelta(seconds=settings.webhook_lease_seconds)
    return repo.renew(session, delivery_ids, worker, until) == len(delivery_ids)


def backoff(settings: Settings, attempts: int, rng: random.Random) -> timedelta:
    """The wait after the `attempts`-th failure: doubling from the first wait up to the
    longest, each drawn from its upper half so retries of many targets spread out."""
    first, longest = settings.webhook_backoff_seconds
    wait = min(longest, first * 2 ** min(attempts - 1, 40))
    return timedelta(seconds=wait * rng.uniform(0.5, 1.0))


@dataclass(frozen=True)
class Attempt:
    """How one sending of a delivery went: the receiver's answer, or why there was none."""

    delivery_id: int
    webhook_id: str
    answer: Answer | None
    error: str | None


def record(session: Session, settings: Settings, worker: str, attempts: Sequence[Attempt],
           now: datetime, rng: random.Random, unsent: Sequence[int] = ()) -> None:
    """Record a batch of attempts (see `record_one`) and give back the leases of the
    `unsent` deliveries; those whose lease `worker` lost are left to the worker that
    took it over. A target answering 2xx makes its deliveries that were waiting for an
    answer (refused, timed out) due now: a receiver back from an outage gets its
    backlog at once, not as each back-off runs out."""
    by_status: dict[int, list[int]] = {}
    failed: list[Attempt] = []
    for attempt in attempts:
        if attempt.answer is not None and 200 <= attempt.answer.status < 300:
            by_status.setdefault(attempt.answer.status, []).append(attempt.delivery_id)
        else:
            failed.append(attempt)
    # The common case in one statement per status, not one per delivery.
    for status, ids in by_status.items():
        repo.delivered(session, ids, worker, status, now)
    if failed:
        held = repo.held(session, [attempt.delivery_id for attempt in failed], worker)
        for attempt in failed:
            delivery = held.get(attempt.delivery_id)
            if delivery is not None:
                record_one(session, settings, delivery, attempt, now, rng)
    if unsent:
        repo.release(session, unsent, worker)
    back = {attempt.webhook_id for attempt in attempts
            if attempt.answer is not None and 200 <= attempt.answer.status < 300}
    if back:
        repo.hurry(session, sorted(back), now)
    session.flush()


def record_one(session: Session, settings: Settings, delivery: WebhookDelivery,
               attempt: Attempt, now: datetime, rng: random.Random) -> str:
    """Record one attempt of a held delivery: delivered on a 2xx answer, else retried
    later, or, after `webhook_retry_seconds` of failures, given up on with its
    subscription disabled. Returns the state recorded."""
    answer, error = attempt.answer, attempt.error
    delivery.attempts += 1
    delivery.lease_until = delivery.lease_owner = None
    delivery.last_status = answer.status if answer else None
    if answer is not None and 200 <= answer.status < 300:
        delivery.state, delivery.delivered_at, delivery.last_error = repo.DELIVERED, now, None
        return delivery.state
    delivery.last_error = error or _answer_text(answer)
    delivery.first_failed_at = delivery.first_failed_at or now
    failing = now - delivery.first_failed_at
    if failing < timedelta(seconds=settings.webhook_retry_seconds):
        delivery.next_at = now + backoff(settings, delivery.attempts, rng)
        return delivery.state
    delivery.state = repo.FAILED
    hook = repo.webhook(session, delivery.webhook_id)
    if hook is not None and hook.disabled_at is None:
        hours = failing.total_seconds() / 3600
        hook.disabled_at = now
        hook.disabled_reason = (
            f"delivery {delivery.id} (event {delivery.event_id}) failed for {hours:.1f} h, "
            f"{delivery.attempts} attempts; the last: {delivery.last_error}. Fix the target, "
            f"then `gridgate webhook redeliver {hook.id} {delivery.id}` resumes it")
    return delivery.state


def _answer_text(answer: Answer | None) -> str:
    if answer is None:
        return "no answer"
    text = answer.body[:ERROR_CHARS].decode("utf-8", "replace").strip()
    return f"HTTP {answer.status}" + (f": {text}" if text else "")
