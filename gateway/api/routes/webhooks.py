"""/api/v1/webhooks: subscriptions to events, delivered by the worker.

    POST   /webhooks                                  {url, types?, jobs?} -> 201, secret once
    GET    /webhooks                                  yours
    GET    /webhooks/{id}                             one (state, disabled_reason)
    DELETE /webhooks/{id}
    GET    /webhooks/{id}/deliveries                  newest first
    POST   /webhooks/{id}/deliveries/{n}/redeliver    send it again (same webhook-id)

Each delivery is the CloudEvent the event stream sends, signed per Standard Webhooks
(gateway.services.webhooks). Another user's subscription answers 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.db.base import utcnow
from gateway.schemas.webhooks import (
    DeliveryList,
    DeliveryOut,
    NewWebhookOut,
    WebhookList,
    WebhookOut,
)
from gateway.services import cursors
from gateway.services.events.feed import MAX_JOB_FILTERS
from gateway.services.webhooks import subscriptions as service

router = APIRouter(prefix="/api/v1", tags=["webhooks"])


class WebhookCreate(BaseModel):
    url: str = Field(min_length=1, max_length=2000,
                     description="Where to POST: https (http only in admin-allowed ranges).")
    types: list[str] = Field(default_factory=list, max_length=16,
                             description="Event types to send (none: all).")
    jobs: list[str] = Field(default_factory=list, max_length=MAX_JOB_FILTERS,
                            description="Only these jobs' events (none: all you may read).")


@router.post("/webhooks", status_code=201, response_model=NewWebhookOut)
def create_webhook(body: WebhookCreate, principal: JobsWriter, runtime: RuntimeDep,
                   response: Response) -> NewWebhookOut:
    """Subscribe a URL to the events of jobs you may read, from now on. The answer holds
    the signing `secret`, shown this once."""
    with runtime.unit_of_work() as session:
        created = service.create(session, runtime.settings, principal, body.url,
                                 body.types, body.jobs, utcnow())
    response.headers["Location"] = f"/api/v1/webhooks/{created['id']}"
    return created


@router.get("/webhooks", response_model=WebhookList)
def list_webhooks(principal: JobsReader, runtime: RuntimeDep, limit: Limit = DEFAULT_LIMIT,
                  cursor: Cursor = None) -> WebhookList:
    """Your subscriptions, oldest first."""
    with runtime.readers() as session:
        items = [service.webhook_out(h) for h in service.owned(session, principal.user_id)]
    page = cursors.from_list(items, limit, cursor, lambda item: item["id"])
    return WebhookList(items=list(page.rows), next_cursor=page.next_cursor)


@router.get("/webhooks/{webhook_id}", response_model=WebhookOut)
def get_webhook(webhook_id: str, principal: JobsReader, runtime: RuntimeDep) -> WebhookOut:
    """One subscription: `state`, and `disabled_reason` when the worker gave up on it."""
    with runtime.readers() as session:
        return service.webhook_out(service.get(session, principal.user_id, webhook_id))


@router.delete("/webhooks/{webhook_id}", status_code=204, response_class=Response)
def delete_webhook(webhook_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Delete the subscription and its deliveries; nothing more is sent."""
    with runtime.unit_of_work() as session:
        service.delete(session, principal.user_id, webhook_id)
    return Response(status_code=204)


@router.get("/webhooks/{webhook_id}/deliveries", response_model=DeliveryList)
def list_deliveries(webhook_id: str, principal: JobsReader, runtime: RuntimeDep,
                    limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> DeliveryList:
    """The subscription's deliveries, newest first: state, attempts, the last answer."""
    with runtime.readers() as session:
        page = service.deliveries(session, principal.user_id, webhook_id, limit, cursor)
        return DeliveryList(items=[service.delivery_out(d) for d in page.rows],
                            next_cursor=page.next_cursor)


@router.post("/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
             response_model=DeliveryOut)
def redeliver(webhook_id: str, delivery_id: int, principal: JobsWriter,
              runtime: RuntimeDep) -> DeliveryOut:
    """Send the delivery again now, with the same `webhook-id`; a disabled subscription
    is enabled again."""
    with runtime.unit_of_work() as session:
        return service.delivery_out(service.redeliver(session, principal.user_id,
                                                      webhook_id, delivery_id, utcnow()))
