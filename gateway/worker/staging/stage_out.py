"""Stage-out step: collect a finished run's outputs, keep them listed or fetch them.

1. List regular files and symlinks in the job directory (GNU find, NUL-separated) and
   keep those an output glob matches (`rules.output_globs`).
2. A matched symlink is resolved on the site: one whose target lies outside the job
   directory (/etc/passwd, another job's directory) is refused, never followed or read;
   one that stays inside and names a regular file stands for it (that file is what gets
   hashed and fetched). Refusals are listed in the final event's reason; the job is not
   failed for them.
3. Per-job limits on count and bytes, and for `fetch` the owner's store quota; sha256
   of each file computed on the site.
4. `keep`: recorded as they are on the site. `fetch`: downloaded into the gateway store,
   hashed while written, and stored only when the sha256 matches the site's. Each
   fetch's progress is an event (`org.gridgate.job.staging`, direction `out`,
   gateway.worker.staging.progress); its done (or failed) event is committed with the
   job's final state.
5. After a run that completed, the outputs a `deliver` entry names are sent on to their
   URLs (gateway.worker.staging.deliver) before the job completes.
6. A job of several steps (a container's `then`) also comes here, with or without
   outputs: each step's exit code, as the steps recorded them, is read and kept.

The step runs under a lease on the attempt (renewed between fetched files) taken by
gateway.services.lifecycle.stage_out; only the worker still holding it records the
outputs and the final state, so a worker that died mid-way is replaced after the lease
and a late one's result is discarded.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adapters.base import STEP_CODES_FILE
from adapters.errors import AdapterError
from adapters.transfer import site_fs
from adapters.transfer.listing import list_tree, sha256_many
from adapters.transport import FileTransport, Progress
from containers.runtime_errors import runtime_failure
from gateway.domain.errors import GatewayError
from gateway.domain.sizes import human_bytes
from gateway.domain.staging import CONTROL_DIR, IN_STORE, ON_SITE, OutputsMode
from gateway.services.data.file_urls import FileRoots
from gateway.services.data.site_writes import writable_at
from gateway.services.data.uploads import store_usage
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.lifecycle import stage_out
from gateway.services.lifecycle.stage_out import NewOutput, StageOutClaim
from gateway.services.sites.entry import SiteEntry
from gateway.store import BlobStore
from gateway.worker.context import CLAIM_BATCH, StepContext
from gateway.worker.staging.deliver import Sender, Stored, deliver
from gateway.worker.staging.progress import StagingEvents, staging_events
from rules import output_globs

log = logging.getLogger(__name__)

# A runtime that cannot start the program says why before anything else reaches stderr.
RUNTIME_STDERR_BYTES = 16 << 10
# A job's steps: at most its program and 63 `then` steps, each code at most "255\n".
MAX_STEPS = 64
STEP_CODES_MAX_BYTES = MAX_STEPS * 4


class StageOutFailed(GatewayError):
    """The outputs could not be collected as the spec asks."""

    title = "Stage-out failed"


@dataclass(frozen=True)
class CollectedOutput:
    path: str  # relative to the job directory, as matched
    size: int
    sha256: str
    location: str  # IN_STORE or ON_SITE
    site_path: str  # the regular file on the site it was read from


@dataclass(frozen=True)
class Collected:
    outputs: list[CollectedOutput]
    # "path -> target" of symlinks not followed: out of the job directory, or not to a file
    refused: list[str]

    def describe(self) -> str:
        total = sum(o.size for o in self.outputs)
        text = f"collected {len(self.outputs)} output(s), {human_bytes(total)}"
        if self.refused:
            text += (f"; refused {len(self.refused)} symlink(s) pointing outside the job "
                     f"directory or not to a regular file: {', '.join(self.refused[:5])}")
        return text


@dataclass(frozen=True)
class _Match:
    path: str
    site_path: str
    size: int


def stage_outs(ctx: StepContext, site: SiteEntry) -> bool:
    """Collect the outputs of runs that ended; True when there were any."""
    claimed = claim_stage_outs(ctx, site)
    for claim in claimed:
        stage_out_one(ctx, site, claim)
    return bool(claimed)


def claim_stage_outs(ctx: StepContext, site: SiteEntry) -> list[StageOutClaim]:
    """Take the lease on runs whose outputs nobody is collecting."""
    with ctx.unit() as session:
        return stage_out.claim_stage_outs(session, ctx.holder, site.name, CLAIM_BATCH)


def stage_out_one(ctx: StepContext, site: SiteEntry, claim: StageOutClaim) -> None:
    """Collect one run's outputs and, still holding the lease, record them."""
    settings = ctx.rt.settings
    collected: Collected | None = None
    delivered: str | None = None
    step_codes: list[int] | None = None
    failure = None
    events = staging_events(ctx, claim.job_id, direction="out")
    try:
        files = site.adapter_for(claim.owner).files
        if claim.spec.container is not None and claim.spec.container.stepwise:
            step_codes = read_step_codes(files, claim.workdir)
        store_left = 0
        if claim.spec.outputs_mode is OutputsMode.FETCH:
            with ctx.rt.sessions() as session:
                store_left = settings.store_quota_bytes - store_usage(session, claim.owner_id)
        store = BlobStore(settings.store_dir)
        collected = collect(files, claim.workdir, claim.spec.collected, claim.spec.outputs_mode,
                            StagingLimits.from_settings(settings), store,
                            lambda: ctx.renew(claim.attempt_id), store_left, events)
        if collected is None:
            return  # lease lost: whoever holds it now finishes the job
        if claim.spec.deliver and claim.completed:
            delivered = deliver(
                claim.spec.deliver, [Stored(o.path, o.size, o.sha256) for o in collected.outputs],
                store, _sender(ctx, claim),
                lambda: ctx.renew(claim.attempt_id))
            if delivered is None:
                return
    except GatewayError as exc:
        failure = exc.detail
    except AdapterError as exc:
        if exc.transient:
            log.warning("job %s: stage-out interrupted at %s: %s", claim.job_id, site.name,
                        exc.message)
            events.write_quietly(events.failed(f"interrupted, to be continued: "
                                               f"{exc.message}"))
            return  # the lease runs out and a later cycle collects again
        failure = exc.message
    # A failed stage-out records no outputs: no file of it is done.
    ended = events.done_events if failure is None else tuple(events.failed(failure))
    outputs = [] if collected is None else [
        NewOutput(o.path, o.size, o.sha256, o.location, o.site_path)
        for o in collected.outputs]
    notes = [runtime_note(site, claim),
             None if collected is None else collected.describe(), delivered]
    with ctx.unit() as session:
        stage_out.finish_stage_out(session, ctx.holder, site.name, claim, outputs,
                                   "; ".join(n for n in notes if n) or None, failure,
                                   metrics=ctx.rt.metrics, events=ended,
                                   step_codes=step_codes)


def read_step_codes(files: FileTransport, workdir: str) -> list[int] | None:
    """Each step's exit code as the job's steps recorded them (STEP_CODES_FILE); None
    when none ran, or the file says something else (the job can write to it)."""
    try:
        text = site_fs.output(files, ["head", "-c", str(STEP_CODES_MAX_BYTES), "--",
                                      f"{workdir.rstrip('/')}/{STEP_CODES_FILE}"])
    except site_fs.SiteCommandFailed:
        return None
    lines = text.split()
    if not lines or len(lines) > MAX_STEPS or not all(w.isdigit() for w in lines):
        return None
    return [int(w) for w in lines]


def _sender(ctx: StepContext, claim: StageOutClaim) -> Sender:
    """How the owner's outputs leave: the file:// directories they may use now, and their
    own accounts at sites."""
    settings = ctx.rt.settings
    with ctx.rt.sessions() as session:
        roots = FileRoots.of_user(session, settings.file_url_dirs, claim.owner_id, claim.owner)

    def site_files(site: str, path: str) -> FileTransport:
        return writable_at(ctx.rt.sites, site, path, claim.owner)

    return Sender(roots, settings.https_timeout_seconds, site_files=site_files)


def runtime_note(site: SiteEntry, claim: StageOutClaim) -> str | None:
    """For a container job that exited non-zero, the runtime's own reason when its stderr
    holds one (containers.runtime_errors): "container runtime: ..."; else None."""
    if claim.spec.container is None or not claim.exit_code:
        return None
    try:
        head = site.adapter_for(claim.owner).read_output(
            claim.workdir, "stderr", 0, RUNTIME_STDERR_BYTES)
    except AdapterError as exc:
        log.info("job %s: stderr unread at %s: %s", claim.job_id, site.name, exc.message)
        return None
    said = runtime_failure(head.data.decode("utf-8", "replace"))
    return None if said is None else f"container runtime: {said}"


def collect(files: FileTransport, workdir: str, globs: list[str], mode: OutputsMode,
            limits: StagingLimits, store: BlobStore,
            keep_lease: Callable[[], bool], store_left: int,
            events: StagingEvents | None = None) -> Collected | None:
    """Collect the outputs (see module). None when the lease was lost meanwhile.
    `store_left`: what the owner's store quota still takes (read in `fetch` mode only);
    `events` hears of each fetch's progress and end."""
    root = site_fs.real_path(files, workdir)
    if root is None:
        raise StageOutFailed(f"the job directory {workdir} is gone from the site")
    listed = {e.path: e for e in list_tree(files, root)
              if e.path.split("/", 1)[0] != CONTROL_DIR}
    matched, refused = [], []
    for path in output_globs.select(globs, listed):
        entry = listed[path]
        site_path = f"{root}/{path}"
        size = entry.size
        if entry.is_symlink:
            target = site_fs.real_path(files, site_path)
            if target is None or not target.startswith(root + "/"):
                refused.append(f"{path} -> {target or 'nothing'}")
                continue
            try:
                real_size = site_fs.file_size(files, target)
            except site_fs.SiteCommandFailed:  # a directory, a device...
                real_size = None
            if real_size is None:
                refused.append(f"{path} -> {target} (not a regular file)")
                continue
            site_path, size = target, real_size
        matched.append(_Match(path, site_path, size))
    _check_limits(matched, limits)
    if mode is OutputsMode.FETCH:
        _check_quota(matched, store_left)
    digests = sha256_many(files, [m.site_path for m in matched])
    outputs = []
    for m, sha in zip(matched, digests, strict=True):
        if mode is OutputsMode.FETCH:
            if not keep_lease():
                return None
            progress = None if events is None else events.start(m.path, m.size)
            _fetch(files, m, sha, store, progress)
            if events is not None:
                events.finished()
        outputs.append(CollectedOutput(m.path, m.size, sha,
                                       IN_STORE if mode is OutputsMode.FETCH else ON_SITE,
                                       m.site_path))
    return Collected(outputs, refused)


def _check_limits(matched: list[_Match], limits: StagingLimits) -> None:
    if len(matched) > limits.output_max_files:
        raise StageOutFailed(
            f"{len(matched)} files match the output globs, over the per-job limit of "
            f"{limits.output_max_files} (job_output_max_files) by "
            f"{len(matched) - limits.output_max_files}")
    total = sum(m.size for m in matched)
    if total > limits.output_max_bytes:
        raise StageOutFailed(
            f"the matched outputs total {human_bytes(total)}, over the per-job limit of "
            f"{human_bytes(limits.output_max_bytes)} (job_output_max_bytes) by "
            f"{human_bytes(total - limits.output_max_bytes)}")


def _check_quota(matched: list[_Match], store_left: int) -> None:
    total = sum(m.size for m in matched)
    if total > store_left:
        raise StageOutFailed(
            f"fetching the outputs ({human_bytes(total)}) would take the owner's gateway "
            f"store usage over their quota (store_quota_bytes) by "
            f"{human_bytes(total - max(0, store_left))}; they are still "
            "on the site. Free space (DELETE /jobs/{id}/outputs, 'gridgate upload-delete') "
            "or use outputs_mode: keep")


class _HashingSink:
    """A writable stream that hashes and counts what passes through to `out`."""

    def __init__(self, out: Path) -> None:
        self._file = out.open("wb")
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self._file.write(data)
        self.digest.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _fetch(files: FileTransport, m: _Match, sha256: str, store: BlobStore,
           progress: Progress | None) -> None:
    """Download into the store; kept only if it hashes to the site's sha256."""
    if store.has_blob(sha256):
        return
    tmp = store.new_incoming()
    sink = _HashingSink(tmp)
    try:
        try:
            files.download(m.site_path, sink, length=m.size,  # type: ignore[arg-type]
                           progress=progress)
        finally:
            sink.close()
        got = sink.digest.hexdigest()
        if got != sha256 or sink.size != m.size:
            raise StageOutFailed(f"{m.path} arrived with sha256 {got} ({sink.size} bytes); "
                                 f"the site has {sha256} ({m.size} bytes)")
        store.promote_file(tmp, sha256)
    finally:
        tmp.unlink(missing_ok=True)
