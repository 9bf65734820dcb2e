"""Cancel step: send the scheduler the cancels users asked for.

A cancel is remembered once, as `Job.cancel_requested`, committed by the API before it
answers 202. That row is what crash safety needs, and all it needs:
- it exists before anything is sent, so no crash can lose a cancel;
- it is the only record a cancel of a job not submitted yet can have (no scheduler id
  to name anything on the site): stage-in checks it between inputs and before it
  submits, and a job submitted meanwhile gets the cancel on the next cycle;
- this step sends the scheduler's cancel, then commits `cancel_sent_at`; a crash in
  between sends it again (cancels are idempotent; an unknown job is fine);
- the status step tells the adapter which of its jobs were cancelled (from
  `cancel_sent_at`), so a job that then vanished or was killed reads as CANCELLED even
  after a restart. Marker files on the site (what the adapter kept before) added a
  round trip per vanished job and could only repeat this row.
"""

from __future__ import annotations

import logging

from adapters.errors import CredentialsRefused, UnknownJob
from gateway.services.lifecycle import cancels
from gateway.services.lifecycle.claims import Claim
from gateway.services.sites.entry import NoAccount, SiteEntry
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)


def send_cancels(ctx: StepContext, site: SiteEntry) -> bool:
    """Send the cancels not sent yet; True when there were any."""
    with ctx.rt.sessions() as session:
        pending = cancels.pending_cancels(session, site.name)
    for cancel in pending:
        try:
            site.adapter_for(cancel.owner).cancel(cancel.native_id)
        except NoAccount as exc:
            log.error("cannot cancel %s at %s: %s", cancel.native_id, site.name, exc.detail)
            continue
        except CredentialsRefused as exc:
            log.error("cannot cancel %s at %s now: %s", cancel.native_id, site.name,
                      exc.message)
            continue
        except UnknownJob:
            # Gone already; its final state comes from the status poll.
            log.warning("cancel of %s at %s: the site does not know it", cancel.native_id,
                        site.name)
        with ctx.unit() as session:
            cancels.cancel_sent(session, cancel.attempt_id)
    return bool(pending)


def cancel_before_submit(ctx: StepContext, claim: Claim) -> bool:
    """A cancel that came while the job was staging in, or a sibling that started first:
    end the claim here (nothing reached the scheduler). True when it was ended."""
    if not ctx.stop_requested(claim.job_id, claim.attempt_id):  # usual: no locks taken
        return False
    with ctx.unit() as session:
        ended = cancels.cancel_before_submit(session, ctx.holder, claim)
    if ended:
        log.info("job %s: attempt %d ended while staging in", claim.job_id, claim.attempt_id)
    return ended
