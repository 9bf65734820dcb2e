"""Webhook subscriptions and deliveries (gateway.db.webhook_models): the statements of
gateway.services.webhooks. Claims skip rows other workers hold (FOR UPDATE SKIP LOCKED on
PostgreSQL; SQLite has one writer at a time)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, delete, exists, func, or_, select
from sqlalchemy.orm import Session, aliased

from gateway.db.models import User
from gateway.db.webhook_models import Webhook, WebhookDelivery

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


def add(session: Session, webhook: Webhook) -> None:
    session.add(webhook)
    session.flush()


def count_owned(session: Session, owner_id: str) -> int:
    return int(session.execute(select(func.count()).select_from(Webhook)
                               .where(Webhook.owner_id == owner_id)).scalar_one())


def owned(session: Session, owner_id: str) -> list[Webhook]:
    """The owner's subscriptions, oldest first."""
    return list(session.scalars(select(Webhook).where(Webhook.owner_id == owner_id)
                                .order_by(Webhook.created_at, Webhook.id)))


def get_owned(session: Session, owner_id: str, webhook_id: str,
              lock: bool = False) -> Webhook | None:
    query = select(Webhook).where(Webhook.id == webhook_id, Webhook.owner_id == owner_id)
    return session.scalars(query.with_for_update() if lock else query).first()


def remove(session: Session, webhook: Webhook) -> None:
    """The subscription and its deliveries (SQLite enforces no ON DELETE CASCADE here)."""
    session.execute(delete(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook.id))
    session.delete(webhook)
    session.flush()


def lock_enabled(session: Session, limit: int, after: str | None
                 ) -> list[tuple[Webhook, list[str], bool]]:
    """Up to `limit` enabled subscriptions (id above `after`) no other worker is fanning
    out, locked, with their owner's roles and whether the owner is disabled."""
    query = (select(Webhook, User.roles, User.disabled)
             .join(User, User.id == Webhook.owner_id)
             .where(Webhook.disabled_at.is_(None)))
    if after is not None:
        query = query.where(Webhook.id > after)
    rows = session.execute(query.order_by(Webhook.id).limit(limit)
                           .with_for_update(of=Webhook, skip_locked=True)).all()
    return [(hook, list(roles or []), bool(disabled)) for hook, roles, disabled in rows]


def fanned_ids(session: Session, webhook_id: str, above: int, up_to: int) -> set[int]:
    """The event ids in (above, up_to] the subscription already has deliveries of."""
    return set(session.scalars(select(WebhookDelivery.event_id).where(
        WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.event_id > above,
        WebhookDelivery.event_id <= up_to)))


def add_all(session: Session, deliveries: Sequence[WebhookDelivery]) -> None:
    session.add_all(deliveries)
    session.flush()


def claim_due(session: Session, now: datetime, limit: int, owner: str,
              until: datetime) -> list[WebhookDelivery]:
    """Lease up to `limit` pending deliveries that are due, of enabled subscriptions,
    that no worker holds, and that no earlier pending delivery of the same subscription
    and subject precedes (events of one job go out in order)."""
    earlier = aliased(WebhookDelivery)
    blocked = exists().where(earlier.webhook_id == WebhookDelivery.webhook_id,
                             earlier.subject == WebhookDelivery.subject,
                             earlier.id < WebhookDelivery.id, earlier.state == PENDING)
    query = (select(WebhookDelivery)
             .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
             .where(WebhookDelivery.state == PENDING, WebhookDelivery.next_at <= now,
                    or_(WebhookDelivery.lease_until.is_(None),
                        WebhookDelivery.lease_until < now),
                    Webhook.disabled_at.is_(None), ~blocked)
             .order_by(WebhookDelivery.id).limit(limit)
             .with_for_update(of=WebhookDelivery, skip_locked=True))
    found = list(session.scalars(query))
    for delivery in found:
        delivery.lease_until, delivery.lease_owner = until, owner
    session.flush()
    return found


def held(session: Session, delivery_ids: Sequence[int],
         owner: str) -> dict[int, WebhookDelivery]:
    """Those of the deliveries whose lease `owner` still holds, locked, by id."""
    found = session.scalars(select(WebhookDelivery).where(
        WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.lease_owner == owner,
        WebhookDelivery.state == PENDING).with_for_update())
    return {delivery.id: delivery for delivery in found}


def webhook(session: Session, webhook_id: str) -> Webhook | None:
    return session.get(Webhook, webhook_id, with_for_update=True)


def deliveries(session: Session, webhook_id: str, limit: int,
               before: int | None) -> list[WebhookDelivery]:
    """Up to `limit` deliveries of the subscription, newest first (below id `before`)."""
    query = select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
    if before is not None:
        query = query.where(WebhookDelivery.id < before)
    return list(session.scalars(query.order_by(WebhookDelivery.id.desc()).limit(limit)))


def delivery(session: Session, webhook_id: str, delivery_id: int) -> WebhookDelivery | None:
    return session.scalars(select(WebhookDelivery).where(
        and_(WebhookDelivery.webhook_id == webhook_id,
             WebhookDelivery.id == delivery_id)).with_for_update()).first()
