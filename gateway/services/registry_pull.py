"""Registry images pulled on the gateway for a site that cannot pull them itself.

`docker://`: the manifest for linux/amd64 (through an index when there is one), its config
(for the environment) and its layers are downloaded and verified (registry_client), the
layers applied in order to a fresh root file system (layer_unpack: whiteouts, opaque
directories, nothing outside the root), and the tree packed into a SIF (sif_pack).
`oras://`: the artifact's one SIF layer is the image.

The SIF is kept in the store (`registry/sif/<sha256>.sif`) and found again by the digest of
the manifest it came from (`registry/<hex>`: "SHA256 SIZE", written after the SIF, also
under the index digest when there was one), so a later job of the same image downloads
nothing: a digest reference makes no request at all, a tag one manifest request (a tag
may move). Workers wanting one image at once pull it once: the first holds a lock on its
manifest digest in the store (`registry/locks/`, flock), the others then find it cached.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import ssl
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from adapters.transfer import LocalFile
from adapters.transfer.staging import StagedFile
from containers import oci
from containers.errors import RegistryFormatError
from containers.refs import ImageRef, RefKind
from gateway.services.https_fetch import IPAddress, is_public_address
from gateway.services.input_sources import ResolvedInput
from gateway.services.layer_unpack import LayerError, apply_layer
from gateway.services.registry_client import RegistryClient, RegistryPullFailed
from gateway.services.sif_pack import PackError, pack_sif
from gateway.settings import Settings
from gateway.store import BlobStore

REGISTRY_DIR = "registry"
CONFIG_MAX_BYTES = 4 * 1024**2


class _Cache:
    def __init__(self, root: Path) -> None:
        self.root, self.sifs = root, root / "sif"

    def get(self, digest: str) -> ResolvedInput | None:
        """The SIF cached for the manifest `digest`, marked as used now."""
        found = self.get_quietly(digest)
        if found is not None:
            with contextlib.suppress(FileNotFoundError):
                os.utime(self.sifs / f"{found.expected.sha256}.sif")  # sweep_registry
        return found

    def get_quietly(self, digest: str) -> ResolvedInput | None:
        entry = self.root / digest.removeprefix("sha256:")
        try:
            sha, size_text = entry.read_text().split()
            sif = self.sifs / f"{sha}.sif"
            if sif.stat().st_size != int(size_text):
                return None
        except (OSError, ValueError):
            return None
        return ResolvedInput(LocalFile(sif), StagedFile(sha, int(size_text)))

    def put(self, digests: list[str], sif: Path) -> ResolvedInput:
        digest = hashlib.sha256()
        with sif.open("rb") as stream:
            while block := stream.read(1 << 20):
                digest.update(block)
        sha, size = digest.hexdigest(), sif.stat().st_size
        self.sifs.mkdir(mode=0o700, parents=True, exist_ok=True)
        final = self.sifs / f"{sha}.sif"
        os.replace(sif, final)
        resolved = ResolvedInput(LocalFile(final), StagedFile(sha, size))
        return self.link(digests, resolved)

    def link(self, digests: list[str], resolved: ResolvedInput) -> ResolvedInput:
        """Name the cached SIF `resolved` by each manifest (or index) digest."""
        for name in digests:
            part = self.root / f"{name.removeprefix('sha256:')}.{uuid.uuid4()}.part"
            part.write_text(f"{resolved.expected.sha256} {resolved.expected.size}\n")
            os.replace(part, self.root / name.removeprefix("sha256:"))
        return resolved


def sweep_registry(store: BlobStore, max_age_seconds: float) -> int:
    """Remove the pulled SIFs unused for `max_age_seconds`, the names left pointing at
    none, and the work directories of pulls a crash interrupted; how many SIFs."""
    cache = _Cache(store.root / REGISTRY_DIR)
    if not cache.root.is_dir():
        return 0
    cutoff, removed = time.time() - max_age_seconds, 0
    for sif in cache.sifs.glob("*.sif") if cache.sifs.is_dir() else ():
        with contextlib.suppress(FileNotFoundError):
            if sif.stat().st_mtime < cutoff:
                sif.unlink()
                removed += 1
    for entry in cache.root.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if entry.is_file() and (entry.stat().st_mtime < cutoff if entry.suffix == ".part"
                                    else cache.get_quietly(entry.name) is None):
                entry.unlink()
    for lock in (cache.root / "locks").glob("*.lock"):
        with contextlib.suppress(FileNotFoundError):
            if lock.stat().st_mtime < cutoff:
                lock.unlink()
    work = cache.root / "work"
    for leftover in work.iterdir() if work.is_dir() else ():
        with contextlib.suppress(FileNotFoundError):
            if leftover.stat().st_mtime < cutoff:
                _remove_tree(leftover)
    return removed


@contextlib.contextmanager
def _pulling(cache: _Cache, digest: str) -> Iterator[None]:
    """Hold the store's lock on the image `digest` (flock: released if the process dies)."""
    locks = cache.root / "locks"
    locks.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(locks / f"{digest.removeprefix('sha256:')}.lock", os.O_RDWR | os.O_CREAT,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_tree(path: Path) -> None:
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def registry_input(settings: Settings, store: BlobStore, ref: ImageRef, *,
                   allowed: Callable[[IPAddress], bool] = is_public_address,
                   tls: ssl.SSLContext | None = None) -> ResolvedInput:
    """The SIF of the registry image `ref`, pulled (and for docker:// converted) once per
    manifest digest; RegistryPullFailed naming the reference when it cannot be.
    `allowed` and `tls`: see RegistryClient (tests)."""
    target = oci.registry_target(ref)
    cache = _Cache(store.root / REGISTRY_DIR)
    if target.pinned and (hit := cache.get(target.reference)) is not None:
        return hit
    client = RegistryClient(target, ref.uri, insecure=settings.insecure_registry_set,
                            timeout=settings.registry_timeout_seconds, allowed=allowed,
                            tls=tls)
    try:
        body, content_type, digest = client.manifest(target.reference)
        if (hit := cache.get(digest)) is not None:
            return hit
        keys = [digest]
        try:
            document = oci.parse_document(body, content_type)
            if isinstance(document, oci.Index):
                chosen = oci.choose_platform(document)
                if (hit := cache.get(chosen.digest)) is not None:
                    return cache.link([digest], hit)
                body, content_type, _ = client.manifest(chosen.digest)
                document = oci.parse_document(body, content_type)
                keys.append(chosen.digest)
                if not isinstance(document, oci.Manifest):
                    raise RegistryFormatError("the index names another index")
            with _pulling(cache, keys[-1]):  # one pull per image across workers
                if (hit := cache.get(keys[-1])) is not None:
                    return cache.link(keys, hit)
                return _pull(settings, store, client, ref, document, cache, keys)
        except RegistryFormatError as exc:
            raise RegistryPullFailed(f"pulling {ref.uri}: {exc.message}") from None
    finally:
        client.close()


def _pull(settings: Settings, store: BlobStore, client: RegistryClient, ref: ImageRef,
          manifest: oci.Manifest, cache: _Cache, keys: list[str]) -> ResolvedInput:
    work_root = store.root / REGISTRY_DIR / "work"
    work_root.mkdir(mode=0o700, parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=work_root))
    budget = settings.registry_image_max_bytes
    try:
        if ref.kind is RefKind.ORAS:
            sif = work / "image.sif"
            client.blob(oci.sif_layer(manifest), sif, budget)
            return cache.put(keys, sif)
        layers = oci.image_layers(manifest)
        if manifest.config.size > CONFIG_MAX_BYTES:
            raise RegistryFormatError(f"the image config is {manifest.config.size} bytes, "
                                      f"over {CONFIG_MAX_BYTES}")
        client.blob(manifest.config, work / "config.json", CONFIG_MAX_BYTES)
        environment = oci.config_environment((work / "config.json").read_bytes())
        root = work / "root"
        root.mkdir(mode=0o755)
        downloaded = written = 0
        for n, layer in enumerate(layers):
            path = work / f"layer-{n}"
            downloaded += client.blob(layer, path, budget - downloaded)
            try:
                written += apply_layer(root, path, budget - written)
            except LayerError as exc:
                raise RegistryPullFailed(f"pulling {ref.uri}: layer {layer.digest}: "
                                         f"{exc}") from None
            path.unlink()
        try:
            sif = pack_sif(root, work, environment)
        except PackError as exc:
            raise RegistryPullFailed(f"converting {ref.uri} to SIF: {exc}") from None
        return cache.put(keys, sif)
    finally:
        _remove_tree(work)
