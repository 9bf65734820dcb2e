"""Webhook subscriptions: what their owner creates, reads, deletes, and redelivers. Each
user sees only their own (another's answers 404, as a job does). Which events reach a
subscription is decided by the worker (gateway.services.webhooks.delivery)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.db.webhook_models import Webhook, WebhookDelivery
from gateway.domain.errors import Invalid, NotFound
from gateway.domain.principal import Principal
from gateway.repositories import webhooks as repo
from gateway.repositories.events import feed as events
from gateway.repositories.webhooks import Claimed
from gateway.schemas.webhooks import DeliveryOut, NewWebhookOut, WebhookOut
from gateway.services import cursors
from gateway.services.events.feed import feed_filter
from gateway.services.webhooks import signing
from gateway.services.webhooks.targets import check_url
from gateway.settings import Settings

# Subscriptions one user may have.
MAX_PER_USER = 20


@dataclass(frozen=True)
class DeliveryPage:
    rows: Sequence[WebhookDelivery]
    next_cursor: str | None


def create(session: Session, settings: Settings, principal: Principal, url: str,
           types: Sequence[str], job_ids: Sequence[str], now: datetime) -> NewWebhookOut:
    """A new subscription to the events of the jobs the owner may read (`job_ids`:
    only these), from now on; its secret is in this answer only."""
    # The stream's own checks: unknown types and jobs the owner may not read are refused.
    feed_filter(session.connection(), principal, job_ids, types)
    check_url(settings, url)
    if repo.count_owned(session, principal.user_id) >= MAX_PER_USER:
        raise Invalid(f"You have {MAX_PER_USER} webhooks, the most one user may have; "
                      "delete one you no longer use (gridgate webhook delete ID).")
    top = events.last_id(session.connection())
    hook = Webhook(id=str(uuid.uuid4()), owner_id=principal.user_id, url=url,
                   types=list(dict.fromkeys(types)), job_ids=list(dict.fromkeys(job_ids)),
                   secret=signing.new_secret(), floor=top, cursor=top, created_at=now)
    repo.add(session, hook)
    return {**webhook_out(hook), "secret": hook.secret}


def webhook_out(hook: Webhook) -> WebhookOut:
    """What the API shows of a subscription (never its secret)."""
    return {"id": hook.id, "url": hook.url, "types": list(hook.types),
            "jobs": list(hook.job_ids), "state": "disabled" if hook.disabled_at else "active",
            "created_at": hook.created_at, "disabled_at": hook.disabled_at,
            "disabled_reason": hook.disabled_reason}


def delivery_out(delivery: WebhookDelivery) -> DeliveryOut:
    return {"id": delivery.id, "message_id": message_id(delivery),
            "event_id": delivery.event_id, "subject": delivery.subject,
            "state": delivery.state, "attempts": delivery.attempts,
            "created_at": delivery.created_at,
            "next_at": delivery.next_at if delivery.state == repo.PENDING else None,
            "delivered_at": delivery.delivered_at, "last_status": delivery.last_status,
            "last_error": delivery.last_error}


def message_id(delivery: WebhookDelivery | Claimed) -> str:
    """The `webhook-id`: the event's id (also the CloudEvent's `id`), the same on every
    attempt, so a receiver deduplicates by it."""
    return str(delivery.event_id)


def owned(session: Session, owner_id: str) -> list[Webhook]:
    return repo.owned(session, owner_id)


def get(session: Session, owner_id: str, webhook_id: str, lock: bool = False) -> Webhook:
    """The owner's subscription; NotFound for none, or another user's."""
    hook = repo.get_owned(session, owner_id, webhook_id, lock)
    if hook is None:
        raise NotFound(f"No webhook '{webhook_id[:40]}' of yours; `gridgate webhook list` "
                       "shows yours.")
    return hook


def delete(session: Session, owner_id: str, webhook_id: str) -> None:
    repo.remove(session, get(session, owner_id, webhook_id, lock=True))


def deliveries(session: Session, owner_id: str, webhook_id: str, limit: int,
               cursor: str | None) -> DeliveryPage:
    """The subscription's deliveries, newest first, a page at a time."""
    hook = get(session, owner_id, webhook_id)
    before = int(cursors.decode(cursor, (int,))[0]) if cursor else None
    rows = repo.deliveries(session, hook.id, limit + 1, before)
    page = cursors.page(rows, limit, lambda d: (d.id,))
    return DeliveryPage(page.rows, page.next_cursor)


def redeliver(session: Session, owner_id: str, webhook_id: str, delivery_id: int,
              now: datetime) -> WebhookDelivery:
    """Send the delivery again, now (same `webhook-id`); a disabled subscription is
    enabled again: its owner asking is taken as the target being fixed."""
    hook = get(session, owner_id, webhook_id, lock=True)
    delivery = repo.delivery(session, hook.id, delivery_id)
    if delivery is None:
        raise NotFound(f"Webhook '{webhook_id[:40]}' has no delivery {delivery_id}; "
                       f"`gridgate webhook deliveries {webhook_id[:40]}` lists them.")
    hook.disabled_at = hook.disabled_reason = None
    delivery.state, delivery.next_at, delivery.first_failed_at = repo.PENDING, now, None
    delivery.lease_until = delivery.lease_owner = None
    session.flush()
    return delivery
