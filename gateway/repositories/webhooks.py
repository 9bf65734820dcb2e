"""Webhook subscriptions and deliveries (gateway.db.webhook_models): the statements of
gateway.services.webhooks. Claims skip rows other workers hold (FOR UPDATE SKIP LOCKED on
PostgreSQL; SQLite has one writer at a time)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    and_,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session, aliased

from gateway.db.models import Event, User
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


def add_pending(session: Session, webhook_id: str, event_ids: Sequence[int],
                subject_chars: int) -> int:
    """A pending delivery of each event for the subscription, due at the event's time, in
    one statement: its subject (what events go out in order of) the event's job, else
    what the event is about, cut to `subject_chars` (two long site names sharing a start
    are then merely ordered together). How many were made."""
    subject = func.coalesce(Event.job_id,
                            func.substr(func.coalesce(Event.subject, ""), 1, subject_chars))
    made = session.execute(insert(WebhookDelivery).from_select(
        ["webhook_id", "event_id", "subject", "state", "attempts", "created_at", "next_at"],
        select(literal(webhook_id), Event.id, subject, literal(PENDING), literal(0),
               Event.at, Event.at).where(Event.id.in_(event_ids)).order_by(Event.id))
        .returning(WebhookDelivery.id))
    return len(made.all())


@dataclass(frozen=True)
class Claimed:
    """A leased delivery: which event, for which subscription, about what."""

    id: int
    webhook_id: str
    event_id: int
    subject: str


def claim_due(session: Session, now: datetime, heads: int, run: int, owner: str,
              until: datetime) -> list[list[Claimed]]:
    """Lease up to `heads` runs of due pending deliveries of enabled subscriptions that
    no worker holds: each run the first pending delivery of its (subscription, subject)
    (none earlier precedes it: events of one job go out in order) and up to `run` - 1
    pending ones right after it, in id order, as long as each is due and free."""
    earlier = aliased(WebhookDelivery)
    blocked = exists().where(earlier.webhook_id == WebhookDelivery.webhook_id,
                             earlier.subject == WebhookDelivery.subject,
                             earlier.id < WebhookDelivery.id, earlier.state == PENDING)
    first = session.execute(
        select(WebhookDelivery.id, WebhookDelivery.webhook_id, WebhookDelivery.event_id,
               WebhookDelivery.subject)
        .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
        .where(WebhookDelivery.state == PENDING, WebhookDelivery.next_at <= now,
               _free(now), Webhook.disabled_at.is_(None), ~blocked)
        .order_by(WebhookDelivery.id).limit(heads)
        .with_for_update(of=WebhookDelivery, skip_locked=True)).all()
    runs = {(row.webhook_id, row.subject): [Claimed(*row)] for row in first}
    if run > 1 and runs:
        _extend(session, now, runs, run)
    claimed = [d.id for found in runs.values() for d in found]
    if claimed:
        session.execute(update(WebhookDelivery).where(WebhookDelivery.id.in_(claimed))
                        .values(lease_until=until, lease_owner=owner)
                        .execution_options(synchronize_session=False))
    return sorted(runs.values(), key=lambda found: found[0].id)


def _free(now: datetime) -> ColumnElement[bool]:
    return or_(WebhookDelivery.lease_until.is_(None), WebhookDelivery.lease_until < now)


def _extend(session: Session, now: datetime, runs: dict[tuple[str, str], list[Claimed]],
            run: int) -> None:
    """Add to each run the pending deliveries right after its first, while due and free."""
    lowest = min(found[0].id for found in runs.values())
    later = session.execute(
        select(WebhookDelivery.id, WebhookDelivery.webhook_id, WebhookDelivery.event_id,
               WebhookDelivery.subject, WebhookDelivery.next_at,
               WebhookDelivery.lease_until)
        .where(WebhookDelivery.state == PENDING, WebhookDelivery.id > lowest,
               WebhookDelivery.webhook_id.in_({key[0] for key in runs}),
               WebhookDelivery.subject.in_({key[1] for key in runs}))
        .order_by(WebhookDelivery.id).limit(len(runs) * run * 2)).all()
    stopped: set[tuple[str, str]] = set()
    wanted: list[Claimed] = []
    for row in later:
        key = (row.webhook_id, row.subject)
        found = runs.get(key)
        if found is None or key in stopped or row.id <= found[0].id:
            continue
        # A run stops at the first delivery not due, or held: those after it wait.
        if len(found) >= run or row.next_at > now or (
                row.lease_until is not None and row.lease_until >= now):
            stopped.add(key)
            continue
        found.append(Claimed(row.id, row.webhook_id, row.event_id, row.subject))
        wanted.append(found[-1])
    if not wanted:
        return
    # Locked, re-checked: a run is cut where a row was taken or changed meanwhile.
    kept = set(session.scalars(
        select(WebhookDelivery.id)
        .where(WebhookDelivery.id.in_([d.id for d in wanted]),
               WebhookDelivery.state == PENDING, _free(now))
        .with_for_update(skip_locked=True)))
    for key, found in runs.items():
        for index, delivery in enumerate(found[1:], start=1):
            if delivery.id not in kept:
                runs[key] = found[:index]
                break


def renew(session: Session, delivery_ids: Sequence[int], owner: str,
          until: datetime) -> int:
    """Extend `owner`'s lease of the pending deliveries: how many it still held."""
    result = session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.lease_owner == owner,
               WebhookDelivery.state == PENDING)
        .values(lease_until=until).execution_options(synchronize_session=False))
    return int(result.rowcount)  # type: ignore[attr-defined]


def delivered(session: Session, delivery_ids: Sequence[int], owner: str, status: int,
              now: datetime) -> None:
    """Record the deliveries `owner` still holds as answered `status` (2xx) at `now`."""
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.lease_owner == owner,
               WebhookDelivery.state == PENDING)
        .values(state=DELIVERED, delivered_at=now, attempts=WebhookDelivery.attempts + 1,
                last_status=status, last_error=None, lease_until=None, lease_owner=None)
        .execution_options(synchronize_session=False))


def release(session: Session, delivery_ids: Sequence[int], owner: str) -> None:
    """Give back `owner`'s leases of deliveries it did not send (due again at once)."""
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.lease_owner == owner,
               WebhookDelivery.state == PENDING)
        .values(lease_until=None, lease_owner=None)
        .execution_options(synchronize_session=False))


def hurry(session: Session, webhook_ids: Sequence[str], now: datetime) -> None:
    """Make the subscriptions' deliveries that are waiting out a back-off because their
    target did not answer (refused, timed out) due now: it answers again."""
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.state == PENDING, WebhookDelivery.next_at > now,
               WebhookDelivery.webhook_id.in_(webhook_ids),
               WebhookDelivery.last_status.is_(None), WebhookDelivery.attempts > 0)
        .values(next_at=now).execution_options(synchronize_session=False))


def held(session: Session, delivery_ids: Sequence[int],
         owner: str) -> dict[int, WebhookDelivery]:
    """Those of the deliveries whose lease `owner` still holds, locked, by id."""
    found = session.scalars(select(WebhookDelivery).where(
        WebhookDelivery.id.in_(delivery_ids), WebhookDelivery.lease_owner == owner,
        WebhookDelivery.state == PENDING).with_for_update())
    return {delivery.id: delivery for delivery in found}


def targets(session: Session, webhook_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The subscriptions' URL and secret, by id."""
    rows = session.execute(select(Webhook.id, Webhook.url, Webhook.secret)
                           .where(Webhook.id.in_(webhook_ids))).all()
    return {row.id: (row.url, row.secret) for row in rows}


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
