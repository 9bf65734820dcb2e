"""Native array step: claim whole job arrays a site takes as one native array, submit each
with one command, record each task's own id (gateway.services.lifecycle.native_arrays, which says
why a crash at any point is safe); and take over those a dead worker left SUBMITTING."""

from __future__ import annotations

import logging

from adapters.base import ArrayRequest, ArraySubmitter, array_submitter
from adapters.errors import SubmitRejected
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import Reason
from gateway.services.lifecycle import native_arrays
from gateway.services.lifecycle.native_arrays import ArrayClaim
from gateway.services.lifecycle.submit_records import Submitted
from gateway.services.sites.entry import NoAccount, SiteEntry
from gateway.worker.context import StepContext
from gateway.worker.submission.claim import record_rejection
from gateway.worker.submission.record import fault_after_submit, record_submitted
from gateway.worker.submission.requests import build_array_request

log = logging.getLogger(__name__)

# Arrays claimed (or recovered) per site and step.
ARRAY_BATCH = 5


def submit_native_arrays(ctx: StepContext, site: SiteEntry) -> bool:
    """Claim whole arrays waiting at the site that it takes natively, and submit them."""
    if not ctx.rt.settings.job_array_native:
        return False

    def fits(owner: str | None, spec: JobSpec, array: ArrayRequest) -> bool:
        submitter = _submitter(site, owner)
        # Inputs and container images are staged into each task's own directory first:
        # those tasks go one by one.
        return (submitter is not None and not spec.inputs and spec.container is None
                and submitter.array_fits(array))

    with ctx.unit() as session:
        claims = native_arrays.claim_whole_arrays(session, ctx.holder, site, fits,
                                                  ARRAY_BATCH)
    for claim in claims:
        _submit_array(ctx, site, claim)
    return bool(claims)


def recover_native_arrays(ctx: StepContext, site: SiteEntry) -> bool:
    """Take over arrays whose worker vanished while submitting: adopt or submit them."""
    with ctx.unit() as session:
        claims = native_arrays.recover_arrays(session, ctx.holder, site, ARRAY_BATCH)
    for claim in claims:
        _submit_array(ctx, site, claim)
    return bool(claims)


def _submitter(site: SiteEntry, owner: str | None) -> ArraySubmitter | None:
    try:
        return array_submitter(site.adapter_for(owner))
    except NoAccount:
        return None


def _submit_array(ctx: StepContext, site: SiteEntry, claim: ArrayClaim) -> None:
    owner = claim.tasks[0].owner
    submitter = _submitter(site, owner)
    if submitter is None:  # the site's mapping or scheduler changed since the claim
        for task in claim.tasks:
            record_rejection(ctx, site, task, f"{Reason.SUBMIT_REJECTED}: site "
                             f"'{site.name}' no longer takes this job array")
        return
    native_id = None
    if claim.recovering:
        # The earlier submit may have reached the scheduler: adopt, never duplicate.
        native_id = submitter.find_array_by_tag(claim.tag)
        if native_id:
            log.info("adopted array %s as %s at %s", claim.tag, native_id, site.name)
    if native_id is None:
        request = build_array_request(claim.spec, claim.tag, claim.workdir, claim.indices,
                                      claim.throttle, site.shape)
        try:
            native_id = submitter.submit(request)
        except SubmitRejected as exc:
            for task in claim.tasks:
                record_rejection(ctx, site, task, f"{Reason.SUBMIT_REJECTED}: {exc.message}")
            return
        # Transient errors propagate: the leases stay and a later cycle recovers them.
        fault_after_submit()
    ids = submitter.task_ids(native_id, claim.indices)
    log.info("job array %s at %s: %d task(s) as native array %s", claim.array_id,
             site.name, len(claim.tasks), native_id)
    record_submitted(ctx, site, [Submitted(task, ids[task.array_index])
                                 for task in claim.tasks if task.array_index is not None])
