"""Claim step: take ACCEPTED jobs placed at a site (new SUBMITTING attempts under this
worker's lease), take over SUBMITTING attempts whose worker let the lease run out, and
refuse a claim that cannot run."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.repositories.events.facts import NewFact
from gateway.services.lifecycle import claims, submit_records
from gateway.services.lifecycle.claims import Claim
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import CLAIM_BATCH, StepContext


def claim_accepted(ctx: StepContext, site: SiteEntry) -> list[Claim]:
    """New claims, within the site's free job slots (its row locked: max_jobs holds)."""
    with ctx.unit() as session:
        return claims.claim_accepted(session, ctx.holder, site, CLAIM_BATCH)


def recover_stale(ctx: StepContext, site: SiteEntry) -> list[Claim]:
    """Attempts whose submitting worker vanished: take over their lease. Submitting them
    adopts the scheduler's job by its tag first (gateway.worker.submission.submit)."""
    with ctx.unit() as session:
        return claims.recover(session, ctx.holder, site, CLAIM_BATCH)


def record_rejection(ctx: StepContext, site: SiteEntry, claim: Claim, reason: str,
                     events: Sequence[NewFact] = ()) -> None:
    """The claim cannot run: its attempt and job end FAILED with `reason` (and `events`,
    its staging's, in the same unit of work)."""
    ctx.rt.metrics.submissions.labels(site.name, "rejected").inc()
    with ctx.unit() as session:
        submit_records.record_rejection(session, claim, reason, actor=ctx.holder.actor,
                                        events=events)
