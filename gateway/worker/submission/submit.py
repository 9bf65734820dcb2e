"""Submit step: hand claimed attempts to the site, record the site's job ids.

An attempt stays SUBMITTING, under its lease, until its job id is committed. A worker
that dies in between is replaced after the lease (gateway.worker.submission.claim.recover_stale),
and the replacement first asks the site for a job carrying the attempt's tag and adopts
it, submitting only if there is none: nothing is lost, nothing runs twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

from adapters.base import BatchSubmitter, batch_submitter
from adapters.errors import SubmitRejected
from gateway.domain.states import Reason
from gateway.repositories.events.facts import NewFact
from gateway.services.lifecycle.claims import Claim
from gateway.services.lifecycle.submit_records import Submitted
from gateway.services.sites.entry import NoAccount, SiteEntry
from gateway.worker.context import StepContext
from gateway.worker.fanout import fan_out
from gateway.worker.staging.container_launch import ContainerRefused, container_launch
from gateway.worker.staging.stage_in import needs_stage_in, stage_in_claim
from gateway.worker.submission.claim import claim_accepted, record_rejection, recover_stale
from gateway.worker.submission.native_arrays import recover_native_arrays, submit_native_arrays
from gateway.worker.submission.record import (
    FAULT_AFTER_SUBMIT_ENV,
    PassRecorder,
    fault_after_submit,
    record_submitted,
)
from gateway.worker.submission.requests import build_submit_request

log = logging.getLogger(__name__)

__all__ = ["FAULT_AFTER_SUBMIT_ENV", "submit_accepted", "submit_claims", "submit_recovered"]


def submit_recovered(ctx: StepContext, site: SiteEntry) -> bool:
    """Take over attempts whose lease ran out and get them submitted (or adopted);
    native arrays first (gateway.worker.submission.native_arrays)."""
    arrays = recover_native_arrays(ctx, site)
    return submit_claims(ctx, site, recover_stale(ctx, site)) or arrays


def submit_accepted(ctx: StepContext, site: SiteEntry) -> bool:
    """Claim jobs waiting for the site and submit them: whole arrays the site takes as
    native arrays first, then the rest one by one (or in batches)."""
    arrays = submit_native_arrays(ctx, site)
    return submit_claims(ctx, site, claim_accepted(ctx, site)) or arrays


def submit_claims(ctx: StepContext, site: SiteEntry, claims: Sequence[Claim]) -> bool:
    """Submit the claims, several at once: plain jobs in batches (one remote command
    each) where the site's adapter takes them, the rest one by one, a few units in
    parallel (a submission mostly waits on the site; the pooled connection carries
    one channel per command); the quick units' outcomes are committed together
    (PassRecorder). The first error is raised once all units have finished (claims not
    recorded keep their leases and are recovered by tag)."""
    settings = ctx.rt.settings
    units: list[Callable[[], list[Submitted]]] = []
    singles: list[Claim] = []
    batches: dict[int, tuple[BatchSubmitter, list[Claim]]] = {}
    size = settings.worker_submit_batch
    for claim in claims:
        adapter = _batch_adapter(site, claim) if size > 1 else None
        if adapter is None:
            singles.append(claim)
        else:
            batches.setdefault(id(adapter), (adapter, []))[1].append(claim)
    for adapter, group in batches.values():
        if len(group) == 1:
            singles.extend(group)
            continue
        for at in range(0, len(group), size):
            units.append(partial(_submit_batch, ctx, site, adapter, group[at:at + size]))
    # (unit, whether it may stage files and so commits its own outcome)
    flagged = [(unit, False) for unit in units]
    flagged += [(partial(_submit_one, ctx, site, claim), _stages(site, claim))
                for claim in singles]
    recorder = PassRecorder(ctx, site, sum(not stages for _, stages in flagged),
                            settings.worker_submit_batch)

    def run(unit: Callable[[], list[Submitted]], stages: bool) -> None:
        placed: list[Submitted] = []
        try:
            placed = unit()
        finally:
            if stages:
                record_submitted(ctx, site, placed)
            else:
                recorder.done(placed)

    fan_out([partial(run, unit, stages) for unit, stages in flagged],
            settings.worker_submit_threads, f"submit-{site.name}")
    return bool(claims)


def _stages(site: SiteEntry, claim: Claim) -> bool:
    """Whether the claim's unit may take long (files to stage, an image to launch): it
    commits its own outcome, not held with the pass's quick ones."""
    return claim.spec.container is not None or needs_stage_in(claim.spec, site)


def _batch_adapter(site: SiteEntry, claim: Claim) -> BatchSubmitter | None:
    """The adapter that can take this claim in a batch: a plain job (no script to
    store, no inputs to stage, not a recovery) on a site that submits in batches."""
    if (claim.recovering or claim.spec.inputs or claim.spec.executable is None
            or claim.spec.container is not None):
        return None
    try:
        adapter = site.adapter_for(claim.owner)
    except NoAccount:
        return None  # the single path records the refusal
    return batch_submitter(adapter)


def _submit_batch(ctx: StepContext, site: SiteEntry, adapter: BatchSubmitter,
                  claims: Sequence[Claim]) -> list[Submitted]:
    requests = [build_submit_request(c.spec, c.tag, c.workdir, array_index=c.array_index,
                                     site=site.shape) for c in claims]
    outcomes = adapter.submit_many(requests)
    # Transient errors of the command propagate: every lease stays, recovery by tag.
    fault_after_submit()
    placed = []
    for claim, outcome in zip(claims, outcomes, strict=True):
        if isinstance(outcome, str):
            placed.append(Submitted(claim, outcome))
        elif outcome.transient:
            log.warning("job %s at %s: no answer to its submission (%s); it is "
                        "recovered by its tag", claim.job_id, site.name, outcome.message)
        else:
            record_rejection(ctx, site, claim, f"{Reason.SUBMIT_REJECTED}: {outcome.message}")
    return placed


def _submit_one(ctx: StepContext, site: SiteEntry, claim: Claim) -> list[Submitted]:
    """The claim submitted (or adopted): what to record; [] when it was refused or left
    for a later cycle (recorded here)."""
    try:
        adapter = site.adapter_for(claim.owner)
    except NoAccount as exc:  # the site's mapping changed since the job was accepted
        record_rejection(ctx, site, claim, f"{Reason.SUBMIT_REJECTED}: {exc.detail}")
        return []
    native_id = None
    if claim.recovering:
        # The earlier submit may have reached the scheduler: adopt, never duplicate.
        native_id = adapter.find_by_tag(claim.tag, claim.workdir)
        if native_id:
            log.info("adopted %s as %s at %s", claim.tag, native_id, site.name)
    staged = None
    done_events: tuple[NewFact, ...] = ()
    container = None
    if native_id is None and claim.spec.container is not None:
        try:  # before staging: a site that cannot launch it needs no image
            container = container_launch(claim.spec, claim.tag, claim.workdir, site,
                                         site.cache_dir(claim.owner))
        except ContainerRefused as exc:
            record_rejection(ctx, site, claim, f"{Reason.SUBMIT_REJECTED}: {exc.detail}")
            return []
    if native_id is None and needs_stage_in(claim.spec, site):
        summary = stage_in_claim(ctx, site, adapter, claim)
        if summary is None:
            return []
        staged, done_events = summary.describe(), summary.events
        if summary.images:
            # The launch line runs what stage-in made of the images (ch-run: unpacked).
            container = container_launch(claim.spec, claim.tag, claim.workdir, site,
                                         site.cache_dir(claim.owner), summary.images)
    if native_id is None:
        request = build_submit_request(claim.spec, claim.tag, claim.workdir, container,
                                       array_index=claim.array_index, site=site.shape)
        try:
            native_id = adapter.submit(request)
        except SubmitRejected as exc:
            # The inputs are in place all the same: their done events go with the refusal.
            record_rejection(ctx, site, claim, f"{Reason.SUBMIT_REJECTED}: {exc.message}",
                             done_events)
            return []
        # Transient errors propagate: the lease stays and a later cycle recovers it.
        fault_after_submit()
    return [Submitted(claim, native_id, staged, done_events)]
