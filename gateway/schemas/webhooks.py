"""Webhook subscriptions and their deliveries, as the API sends them."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict


class WebhookOut(TypedDict):
    """A subscription. `state` is `active`, or `disabled` with `disabled_reason` saying
    why (deliveries failed for `webhook_retry_seconds`); `types` and `jobs` empty: all."""

    id: str
    url: str
    types: list[str]
    jobs: list[str]
    state: str
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None


class NewWebhookOut(WebhookOut):
    """A new subscription with its signing secret: shown this once, never again."""

    secret: str


class WebhookList(TypedDict):
    """A page of your subscriptions, oldest first; `next_cursor` asks for the next one."""

    items: list[WebhookOut]
    next_cursor: str | None


class DeliveryOut(TypedDict):
    """One event sent (or to be sent) to a subscription. `message_id` is the
    `webhook-id` header (the same on every attempt: deduplicate by it); `state` is
    `pending`, `delivered` or `failed`; `last_status`/`last_error`: the last attempt."""

    id: int
    message_id: str
    event_id: int
    subject: str
    state: str
    attempts: int
    created_at: datetime
    next_at: datetime | None
    delivered_at: datetime | None
    last_status: int | None
    last_error: str | None


class DeliveryList(TypedDict):
    """A page of a subscription's deliveries, newest first."""

    items: list[DeliveryOut]
    next_cursor: str | None
