"""Registry images pulled on the gateway for a site that cannot pull them itself.

`docker://`: the manifest for linux/amd64 (through an index when there is one), its config
(for the environment) and its layers are downloaded and verified (registry_client), the
layers applied in order to a fresh root file system (layer_unpack: whiteouts, opaque
directories, nothing outside the root), and the tree packed into a SIF (sif_pack).
`oras://`: the artifact's one SIF layer is the image.

The SIF is kept in the store's image cache (gateway.services.images.cache) and found again
by the digest of the manifest it came from (also under the index digest when there was
one), so a later job of the same image downloads nothing: a digest reference makes no
request at all, a tag one manifest request (a tag may move). Workers wanting one image at
once pull it once: the first holds the cache's lock on its manifest digest, the others
then find it cached.
"""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path

from containers.errors import RegistryFormatError
from containers.image import oci
from containers.refs import ImageRef, RefKind
from gateway.services.data.https_fetch import IPAddress, is_public_address
from gateway.services.data.input_sources import ResolvedInput
from gateway.services.images.cache import ImageCache, remove_tree
from gateway.services.images.layer_unpack import LayerError, apply_layer
from gateway.services.images.registry_client import RegistryClient, RegistryPullFailed
from gateway.services.images.sif_pack import PackError, pack_sif
from gateway.settings import Settings
from gateway.store import BlobStore

CONFIG_MAX_BYTES = 4 * 1024**2


def registry_input(settings: Settings, store: BlobStore, ref: ImageRef, *,
                   allowed: Callable[[IPAddress], bool] = is_public_address,
                   tls: ssl.SSLContext | None = None) -> ResolvedInput:
    """The SIF of the registry image `ref`, pulled (and for docker:// converted) once per
    manifest digest; RegistryPullFailed naming the reference when it cannot be.
    `allowed` and `tls`: see RegistryClient (tests)."""
    target = oci.registry_target(ref)
    cache = ImageCache(store)
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
            with cache.locked(keys[-1]):  # one pull per image across workers
                if (hit := cache.get(keys[-1])) is not None:
                    return cache.link(keys, hit)
                return _pull(settings, store, client, ref, document, cache, keys)
        except RegistryFormatError as exc:
            raise RegistryPullFailed(f"pulling {ref.uri}: {exc.message}") from None
    finally:
        client.close()


def _pull(settings: Settings, store: BlobStore, client: RegistryClient, ref: ImageRef,
          manifest: oci.Manifest, cache: ImageCache, keys: list[str]) -> ResolvedInput:
    work_root = cache.root / "work"
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
        remove_tree(work)
