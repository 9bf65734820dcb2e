"""Stage-in step: put every input of a claimed job into its directory on the site,
inside the claim's lease (renewed between files); the job is submitted only while this
worker still holds it, so a worker that took over an expired lease never races the
first into a second submission.

Each input goes through `adapters.transfer.stage` with the site's FileTransport and the
site's cache (`SiteEntry.cache_dir`): written under a partial name, size and sha256
verified on the site, renamed atomically, continued from the partial file's size after
an interruption. Nothing about the transfer itself is kept in the database: it is
derivable from the site (cache entries, partial files), so a worker that takes over an
expired lease simply stages again, and finished inputs cost one sha256sum each.

A container job's SIF image (or, for ch-run, its SquashFS partition: gateway.worker.
stage_image) is staged the same way, to IMAGE_FILE in the job directory; it does not count
against the per-job input limit. For ch-run the cached SquashFS is then unpacked once in
the site's cache, and the summary names that directory: the image the launch line runs.

Each input's progress is an event (`org.gridgate.job.staging`, gateway.worker.staging.
progress); its done event is committed with the job's hand-over to the site, its failure
with the job's FAILED change.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from adapters.base import Adapter
from adapters.errors import AdapterError, StagingFailed
from adapters.transfer import StageResult, site_fs, stage
from adapters.transport import FileTransport
from containers.refs import parse_image_ref
from gateway.domain.errors import GatewayError
from gateway.domain.jobspec import JobSpec
from gateway.domain.sizes import human_bytes
from gateway.domain.staging import SourceKind, parse_source
from gateway.domain.states import Reason
from gateway.repositories.events.facts import NewFact
from gateway.runtime import Runtime
from gateway.services.data.input_sources import (
    InputUnavailable,
    ResolvedInput,
    site_input,
    upload_input,
)
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.lifecycle.claims import Claim
from gateway.services.sites.entry import SiteEntry
from gateway.store import BlobStore
from gateway.worker.cancel import cancel_before_submit
from gateway.worker.context import StepContext
from gateway.worker.staging.container_launch import (
    ShippedImage,
    image_path,
    shipped_images,
    stages_image,
)
from gateway.worker.staging.keyed_locks import KeyedLocks
from gateway.worker.staging.progress import StagingEvents, staging_events
from gateway.worker.staging.stage_image import mount_points, resolve_image, unpack_on_site
from gateway.worker.submission.claim import record_rejection

log = logging.getLogger(__name__)

# Serialises stagings of one content to one site in this process (see adapters.transfer).
STAGING_LOCKS = KeyedLocks()


@dataclass(frozen=True)
class StageInJob:
    """What stage-in needs to know about the job."""

    job_id: str
    owner_id: str
    owner: str | None
    workdir: str
    spec: JobSpec


@dataclass(frozen=True)
class StageInSummary:
    files: int
    bytes_sent: int
    cached: int
    # Image -> what the launch line runs, when not the staged file (ch-run: unpacked).
    images: Mapping[str, str] = field(default_factory=dict)
    # The inputs' done events, to commit with the hand-over to the site.
    events: tuple[NewFact, ...] = ()

    def describe(self) -> str:
        return (f"staged {self.files} input(s), {human_bytes(self.bytes_sent)} sent, "
                f"{self.cached} from the site's cache")


def stage_in(rt: Runtime, site: SiteEntry, adapter: Adapter, job: StageInJob,
             keep_lease: Callable[[], bool], events: StagingEvents | None = None
             ) -> StageInSummary | None:
    """Stage the job's inputs into its (0700) directory. None when `keep_lease` said the
    lease was lost (another worker took the job over: stop, do not submit). `events`
    hears of each input's progress and end.

    Raises InputUnavailable or a final AdapterError when the job cannot be staged, and
    SiteUnavailable (transient) when trying again later may work."""
    files = adapter.files
    site_fs.make_private_dirs(files, [job.workdir, *bind_sources(job.spec, job.workdir)])
    resolved: list[ResolvedInput] = []
    images: list[tuple[ShippedImage, ResolvedInput]] = []
    try:
        for item in job.spec.inputs:
            resolved.append(_resolve(rt, job, item.source))
        for shipped in shipped_images(job.spec, site):
            images.append((shipped, resolve_image(rt, job.owner_id, parse_image_ref(
                shipped.image), shipped.fit.extract_squashfs)))
        summary = _stage_all(rt, site, files, job, resolved, keep_lease, events)
        for shipped, source in images:
            if summary is None:
                break
            summary = _stage_image(site, files, job, shipped, source, summary, keep_lease)
        return summary
    finally:
        for source in [*resolved, *(s for _, s in images)]:  # made for this staging only
            if source.scratch is not None:
                source.scratch.unlink(missing_ok=True)


def needs_stage_in(spec: JobSpec, site: SiteEntry) -> bool:
    """Whether stage-in has anything to do for the job at `site`: inputs, an image to ship,
    or directories its container binds to make."""
    return bool(spec.inputs or stages_image(spec, site) or bind_sources(spec, ""))


def bind_sources(spec: JobSpec, workdir: str) -> list[str]:
    """The container's binds from the job directory that no input fills: made empty
    before staging, since a runtime refuses to bind what does not exist (a directory the
    program writes its outputs to)."""
    if spec.container is None:
        return []
    dests = {item.dest for item in spec.inputs}
    return [f"{workdir.rstrip('/')}/{b.src}" for b in spec.container.binds
            if not b.src.startswith("/") and b.src not in dests]


def _stage_all(rt: Runtime, site: SiteEntry, files: FileTransport, job: StageInJob,
               resolved: list[ResolvedInput], keep_lease: Callable[[], bool],
               events: StagingEvents | None) -> StageInSummary | None:
    limits = StagingLimits.from_settings(rt.settings)
    total = sum(r.expected.size for r in resolved)
    if total > limits.input_max_bytes:
        raise InputUnavailable(
            f"the inputs total {human_bytes(total)}, over the per-job limit of "
            f"{human_bytes(limits.input_max_bytes)} (job_input_max_bytes) by "
            f"{human_bytes(total - limits.input_max_bytes)}")
    results: list[StageResult] = []
    cache_dir = site.cache_dir(job.owner)
    for item, source in zip(job.spec.inputs, resolved, strict=True):
        if not keep_lease():
            return None
        progress = None if events is None else events.start(item.dest,
                                                             source.expected.size)
        with STAGING_LOCKS.hold((site.name, source.expected.sha256)):
            results.append(stage(files, source.source, source.expected,
                                 f"{job.workdir.rstrip('/')}/{item.dest}", cache_dir=cache_dir,
                                 progress=progress))
        if events is not None:
            events.finished()
        log.info("job %s: staged %s to %s", job.job_id, item.source, item.dest)
    return StageInSummary(len(results), sum(r.bytes_sent for r in results),
                          sum(r.cached for r in results))


def _stage_image(site: SiteEntry, files: FileTransport, job: StageInJob,
                 shipped: ShippedImage, image: ResolvedInput, summary: StageInSummary,
                 keep_lease: Callable[[], bool]) -> StageInSummary | None:
    """Ship an image like an input: once per site cache, hard-linked into the job; for
    ch-run (`extract_squashfs`) also unpacked once in the cache."""
    if not keep_lease():
        return None
    digest = image.expected.sha256
    cache_dir = site.cache_dir(job.owner)
    unpacked = dict(summary.images)
    try:
        with STAGING_LOCKS.hold((site.name, digest)):
            result = stage(files, image.source, image.expected,
                           image_path(job.workdir, shipped.index), cache_dir=cache_dir)
            if shipped.fit.extract_squashfs:
                unpacked[shipped.image] = unpack_on_site(files, cache_dir, digest,
                                                         mount_points(job.spec))
    except StagingFailed as exc:
        # Never run a damaged image: the job fails naming the content it expected.
        raise InputUnavailable(f"the image (sha256 {digest}) did not arrive intact at "
                               f"{site.name}: {exc.message}") from None
    log.info("job %s: staged its image (sha256 %s, %s)", job.job_id, digest,
             "from the site's cache" if result.cached else f"{result.bytes_sent} bytes sent")
    return StageInSummary(summary.files + 1, summary.bytes_sent + result.bytes_sent,
                          summary.cached + int(result.cached), unpacked)


def _resolve(rt: Runtime, job: StageInJob, text: str) -> ResolvedInput:
    source = parse_source(text)
    store = BlobStore(rt.settings.store_dir)
    with rt.sessions() as session:
        if source.kind is SourceKind.UPLOAD:
            assert source.upload_id is not None
            return upload_input(session, store, job.owner_id, source.upload_id)
        if source.kind is SourceKind.SITE:
            return site_input(session, rt.sites, job.owner_id, job.owner, source)
    from gateway.services.data.https_fetch import https_input

    assert source.url is not None
    return https_input(rt.settings, store, source.url)


def stage_in_claim(ctx: StepContext, site: SiteEntry, adapter: Adapter, claim: Claim
                   ) -> StageInSummary | None:
    """Stage the claim's inputs under a renewed lease. None when there is nothing to
    submit now: the job failed or was cancelled (recorded), the lease was lost, or the
    site is down (the lease runs out and this or another worker stages again,
    continuing from what reached the site)."""
    if not ctx.renew(claim.attempt_id):
        return None
    job = StageInJob(claim.job_id, claim.owner_id, claim.owner, claim.workdir, claim.spec)

    def proceed() -> bool:
        # Between inputs: stop on a lost lease, a cancel or a sibling that started first
        # (recorded just after).
        return (ctx.renew(claim.attempt_id)
                and not ctx.stop_requested(claim.job_id, claim.attempt_id))

    events = staging_events(ctx, claim.job_id)
    try:
        staged = stage_in(ctx.rt, site, adapter, job, proceed, events)
    except GatewayError as exc:
        record_rejection(ctx, site, claim, f"{Reason.STAGE_IN_FAILED}: {exc.detail}",
                         events.failed(exc.detail))
        return None
    except AdapterError as exc:
        if exc.transient:
            log.warning("job %s: staging interrupted at %s: %s", claim.job_id, site.name,
                        exc.message)
            # No state change to go with: the lease runs out and staging goes on later.
            events.write_quietly(events.failed(f"interrupted, to be continued: "
                                               f"{exc.message}"))
            return None
        record_rejection(ctx, site, claim, f"{Reason.STAGE_IN_FAILED}: {exc.message}",
                         events.failed(exc.message))
        return None
    # A cancel between inputs stopped the staging, or came during the last one.
    if cancel_before_submit(ctx, claim):
        return None
    # Submit only while still holding the lease: whoever took it over submits instead.
    if staged is None or not ctx.renew(claim.attempt_id):
        log.warning("job %s: lease lost while staging; not submitting", claim.job_id)
        return None
    return dataclasses.replace(staged, events=events.done_events)


__all__ = ["STAGING_LOCKS", "StageInJob", "StageInSummary", "stage_in", "stage_in_claim"]
