"""The worker's mail step, once per cycle for all sites: job mail (a spec's `notify`)
from the events outbox, through the SMTP relay the administrator configured
(gateway.services.mail.outbox says how none is lost or sent twice)."""

from __future__ import annotations

from gateway.db.base import utcnow
from gateway.services.mail.outbox import MailPass
from gateway.services.mail.relay import Relay
from gateway.worker.context import StepContext


def send_mail(ctx: StepContext) -> bool:
    """Send the job mail due; True when more may be waiting. Nothing without a relay."""
    relay = Relay.from_settings(ctx.rt.settings)
    if relay is None:
        return False
    # The submit lease: a mail claimed by a worker that died goes again after it.
    return MailPass(ctx.unit, relay, ctx.holder.worker_id, ctx.holder.lease, utcnow).run()
