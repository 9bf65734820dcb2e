"""ORM models of webhooks (issue 29 item 4): a user's subscriptions, and one delivery per
(subscription, event) fanned out from the `events` outbox by the worker
(gateway.services.webhooks.delivery says why a crash at any point is safe)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base, utcnow


class Webhook(Base):
    """A subscription: where to POST which events, signed with `secret`. `cursor` is the
    highest event id fanned out; `floor` the newest id when it was made (nothing older
    is delivered). `disabled_reason` says why the worker gave up on it."""

    __tablename__ = "webhooks"
    __table_args__ = (Index("ix_webhooks_owner_created", "owner_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    url: Mapped[str] = mapped_column(Text)
    types: Mapped[list[str]] = mapped_column(JSON, default=list)
    job_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    # The raw Standard Webhooks secret: signing needs it, so it cannot be a hash.
    secret: Mapped[str] = mapped_column(String(128))
    floor: Mapped[int] = mapped_column(Integer)
    cursor: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    disabled_at: Mapped[datetime | None] = mapped_column()
    disabled_reason: Mapped[str | None] = mapped_column(Text)


class WebhookDelivery(Base):
    """One event for one subscription: pending until the target answered 2xx, retried
    with back-off; `lease_until` keeps two workers from sending it at once."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("webhook_id", "event_id"),
        Index("ix_webhook_deliveries_due", "state", "next_at"),
        Index("ix_webhook_deliveries_subject", "webhook_id", "subject", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event_id: Mapped[int] = mapped_column(ForeignKey("events.id"))
    subject: Mapped[str] = mapped_column(String(36))
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    next_at: Mapped[datetime] = mapped_column()
    first_failed_at: Mapped[datetime | None] = mapped_column()
    delivered_at: Mapped[datetime | None] = mapped_column()
    lease_until: Mapped[datetime | None] = mapped_column()
    lease_owner: Mapped[str | None] = mapped_column(String(128))
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
