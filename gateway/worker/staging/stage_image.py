"""The image of a container job, as stage-in ships it: a SIF file (upload:<id>, https://,
or a docker:// or oras:// image the gateway pulls for a site that cannot:
gateway.services.images.registry_pull), or for ch-run the SIF's SquashFS partition, extracted on
the gateway once per SIF digest and kept in the store beside the blobs
(`derived/<sif sha256>.squashfs`, with its own sha256 in a sidecar written after it, so a
half-written pair is never used).

The image then goes through the same path as an input file (adapters.transfer.stage): into
the site's cache by sha256, verified there, hard-linked into the job directory. For ch-run
the SquashFS file is then unpacked once per digest beside it in the cache
(`<sha256>.d`, under the site lock of that entry): a job runs as an unprivileged account,
to which /dev/fuse is closed, so ch-run cannot mount the file itself (it can as root).
Unlike the SquashFS file, which is hashed again on the site at every staging, the unpacked
tree is trusted once made: ch-run mounts it read-only and binds only the job directory,
so containerised jobs cannot change it, but a plain job of the same site account could.

A SIF is read only after its bytes match the digest the upload (or download) recorded, so
an image damaged in the gateway's store is never extracted, staged or run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from adapters.transfer import StagedFile, site_fs, site_lock
from adapters.transfer.sources import LocalFile
from adapters.transport import Transport
from containers.errors import ContainerError
from containers.image.sif import copy_object, has_squashfs_magic, read_sif
from containers.image.tools import unpack_once_argv
from containers.refs import ImageRef, RefKind
from gateway.domain.jobspec import JobSpec
from gateway.runtime import Runtime
from gateway.services.data.input_sources import InputUnavailable, ResolvedInput, upload_input
from gateway.services.images.registry_pull import registry_input
from gateway.store import BlobStore
from gateway.store.blobs import is_sha256
from gateway.store.files import held

DERIVED_DIR = "derived"
UNPACKED_SUFFIX = ".d"


def resolve_image(rt: Runtime, owner_id: str, ref: ImageRef, extract: bool) -> ResolvedInput:
    """The bytes to ship for a SIF image of the job (its SquashFS partition with
    `extract`)."""
    store = BlobStore(rt.settings.store_dir)
    if ref.kind is RefKind.UPLOAD:
        with rt.sessions() as session:
            sif = upload_input(session, store, owner_id, ref.path)
    elif ref.kind in (RefKind.DOCKER, RefKind.ORAS):
        sif = registry_input(rt.settings, store, ref)  # kept in the store: no scratch
    else:
        from gateway.services.images.https_images import https_image

        sif = https_image(rt.settings, store, ref.uri)
    if not extract:
        return sif
    try:
        return squashfs_of(store, sif)
    finally:
        if sif.scratch is not None:
            sif.scratch.unlink(missing_ok=True)


def _extracted(target: Path, sidecar: Path) -> ResolvedInput | None:
    if sidecar.is_file() and target.is_file():
        size_text, digest = sidecar.read_text().split()
        if int(size_text) == target.stat().st_size:
            os.utime(sidecar)  # used now: sweep_derived keeps it a while longer
            return ResolvedInput(LocalFile(target), StagedFile(digest, int(size_text)))
    return None


def squashfs_of(store: BlobStore, sif: ResolvedInput) -> ResolvedInput:
    """The SquashFS partition of the SIF `sif`, extracted once per SIF digest: workers
    (threads or processes) wanting it at once hold a lock on the digest in the store, so
    one extracts and the others find it done."""
    assert isinstance(sif.source, LocalFile)
    derived = store.root / DERIVED_DIR
    target = derived / f"{sif.expected.sha256}.squashfs"
    sidecar = target.with_name(target.name + ".sha256")
    if (found := _extracted(target, sidecar)) is not None:
        return found
    with held(derived / f"{sif.expected.sha256}.lock"):
        if (found := _extracted(target, sidecar)) is not None:
            return found
        tmp = store.new_incoming()
        try:
            size, digest = _extract(Path(os.fspath(sif.source.path)), tmp,
                                    sif.expected.sha256)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        part = sidecar.with_name(sidecar.name + ".part")
        part.write_text(f"{size} {digest}\n")
        os.replace(part, sidecar)
    return ResolvedInput(LocalFile(target), StagedFile(digest, size))


def sweep_derived(store: BlobStore, max_age_seconds: float) -> int:
    """Remove the partitions extracted from SIFs no longer in the store (their uploads
    were deleted; an https image's download is kept only while it is staged) and unused
    for `max_age_seconds`; how many. A partition in use keeps its SIF's blob, or was
    used (its sidecar touched) recently."""
    derived = store.root / DERIVED_DIR
    if not derived.is_dir():
        return 0
    cutoff, removed = time.time() - max_age_seconds, 0
    for target in derived.glob("*.squashfs"):
        sha = target.name.removesuffix(".squashfs")
        if not is_sha256(sha) or store.has_blob(sha):
            continue
        pair = (target, target.with_name(target.name + ".sha256"))
        with contextlib.suppress(FileNotFoundError):
            if max(p.stat().st_mtime for p in pair if p.exists()) < cutoff:
                for path in pair:
                    path.unlink(missing_ok=True)
                removed += 1
    for lock in derived.glob("*.lock"):
        with contextlib.suppress(FileNotFoundError):
            if (lock.stat().st_mtime < cutoff
                    and not lock.with_name(lock.stem + ".squashfs").exists()):
                lock.unlink()
    return removed


class _Hashing:
    """A writable file that hashes what goes through it."""

    def __init__(self, path: Path) -> None:
        self.out, self.hash = path.open("wb"), hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        return self.out.write(data)


def _check_digest(sif_path: Path, sha256: str) -> None:
    """InputUnavailable unless the file's bytes hash to `sha256`."""
    digest = hashlib.sha256()
    with sif_path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise InputUnavailable(f"the image {sif_path.name} in the gateway's store does not "
                               f"match its digest (sha256 {digest.hexdigest()}, not {sha256}): "
                               "it is damaged and is not run; upload it again")


def _extract(sif_path: Path, out_path: Path, sha256: str) -> tuple[int, str]:
    _check_digest(sif_path, sha256)
    sink = _Hashing(out_path)
    try:
        with sif_path.open("rb") as stream:
            primary = read_sif(stream).primary_partition()
            if not has_squashfs_magic(stream, primary):
                raise InputUnavailable(f"the image {sif_path.name} has no SquashFS system "
                                       "partition, which ch-run needs")
            size = copy_object(stream, primary, sink)  # type: ignore[arg-type]
        sink.out.flush()
        os.fsync(sink.out.fileno())
    except ContainerError as exc:
        raise InputUnavailable(f"the image {sif_path.name} is not a usable SIF: "
                               f"{exc.message}") from None
    finally:
        sink.out.close()
    return size, sink.hash.hexdigest()


def unpacked_path(cache_dir: str, sha256: str) -> str:
    """Where the SquashFS image `sha256` is unpacked in the site's cache."""
    return f"{cache_dir.rstrip('/')}/{sha256}{UNPACKED_SUFFIX}"


def mount_points(spec: JobSpec) -> tuple[str, ...]:
    """The directories the job binds something at (`/data`: "data"), which an unpacked
    tree must have for ch-run."""
    assert spec.container is not None
    return tuple(sorted({b.dst.strip("/") for b in spec.container.binds if b.dst != "/"}))


def unpack_on_site(transport: Transport, cache_dir: str, sha256: str,
                   points: tuple[str, ...] = ()) -> str:
    """Unpack the cached SquashFS `<cache_dir>/<sha256>` into `<sha256>.d` once, with the
    directories `points` (`mount_points`), under the site's lock on the entry
    (concurrent jobs unpack it once); the directory's path."""
    dest = unpacked_path(cache_dir, sha256)
    with site_lock.hold(transport, cache_dir, sha256):
        site_fs.output(transport, unpack_once_argv(f"{cache_dir.rstrip('/')}/{sha256}", dest,
                                                   points),
                       timeout=site_fs.HASH_TIMEOUT)
    return dest
