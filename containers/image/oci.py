"""OCI registry documents, read without I/O: where a `docker://` or `oras://` reference
points in the registry v2 API, which manifest of an index runs on linux/amd64, and which
blobs make the image (its layers, or for `oras://` the one SIF layer).

Media types are the OCI image spec's and Docker's schema 2 (the same JSON shapes); Docker
schema 1 manifests are refused (deprecated, unsigned digests). Every digest is sha256.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from containers.errors import RegistryFormatError
from containers.refs import DOCKER_HUB, ImageRef, RefKind

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_LIST})
MANIFEST_TYPES = frozenset({OCI_MANIFEST, DOCKER_MANIFEST})
# What the gateway asks for (GET /v2/NAME/manifests/REF `Accept`), preferred first.
ACCEPT = (OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST)
SIF_LAYER = "application/vnd.sylabs.sif.layer.v1.sif"
GZIP_LAYERS = frozenset({"application/vnd.oci.image.layer.v1.tar+gzip",
                         "application/vnd.docker.image.rootfs.diff.tar.gzip"})
TAR_LAYERS = frozenset({"application/vnd.oci.image.layer.v1.tar"})
# Docker Hub's API is not served at the name references use.
API_HOSTS = {DOCKER_HUB: "registry-1.docker.io"}
DEFAULT_TAG = "latest"
MAX_LAYERS = 256  # far above what builders make; bounds the work of one bad manifest
PLATFORM = ("linux", "amd64")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RegistryTarget:
    """Where an image is in the registry API: https://API_HOST/v2/REPOSITORY/manifests/REF."""

    registry: str  # as the reference names it (docker.io, localhost:5000)
    repository: str
    reference: str  # the digest when the reference pins one, else the tag

    @property
    def api_host(self) -> str:
        return API_HOSTS.get(self.registry, self.registry)

    @property
    def pinned(self) -> bool:
        return self.reference.startswith("sha256:")


@dataclass(frozen=True)
class Descriptor:
    """A content descriptor: the blob or manifest `digest` ("sha256:<hex>") of `size` bytes."""

    media_type: str
    digest: str
    size: int
    platform: tuple[str, str] | None = None  # (os, architecture), in an index only

    @property
    def hex(self) -> str:
        return self.digest.removeprefix("sha256:")


@dataclass(frozen=True)
class Index:
    manifests: tuple[Descriptor, ...]


@dataclass(frozen=True)
class Manifest:
    config: Descriptor
    layers: tuple[Descriptor, ...]
    artifact_type: str | None = None


def registry_target(ref: ImageRef) -> RegistryTarget:
    """The registry API coordinates of a docker:// or oras:// reference (a digest wins over
    a tag; no tag means `latest`, as docker reads it)."""
    if ref.kind not in (RefKind.DOCKER, RefKind.ORAS):
        raise RegistryFormatError(f"{ref.uri} is not a registry image reference")
    return RegistryTarget(ref.host, ref.path, ref.digest or ref.tag or DEFAULT_TAG)


def _descriptor(data: object, where: str) -> Descriptor:
    if not isinstance(data, dict):
        raise RegistryFormatError(f"{where} is not a descriptor object")
    media, digest, size = data.get("mediaType"), data.get("digest"), data.get("size")
    if not isinstance(media, str) or not isinstance(digest, str):
        raise RegistryFormatError(f"{where} lacks its mediaType or digest")
    hex_part = digest.removeprefix("sha256:")
    if (not digest.startswith("sha256:") or len(hex_part) != 64
            or any(c not in "0123456789abcdef" for c in hex_part)):
        raise RegistryFormatError(f"{where} has digest {digest!r}; only sha256 is accepted")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RegistryFormatError(f"{where} has no valid size")
    platform = data.get("platform")
    pair = None
    if isinstance(platform, dict):
        pair = (str(platform.get("os", "")), str(platform.get("architecture", "")))
    return Descriptor(media, digest, size, pair)


def parse_document(body: bytes, content_type: str | None) -> Index | Manifest:
    """An index or an image manifest, from the bytes the registry sent and its
    Content-Type (the document's own mediaType when the header is vague)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RegistryFormatError("the manifest is not JSON") from None
    if not isinstance(data, dict):
        raise RegistryFormatError("the manifest is not a JSON object")
    media = data.get("mediaType")
    declared = (content_type or "").split(";")[0].strip()
    kind = declared if declared in INDEX_TYPES | MANIFEST_TYPES else media
    if kind is None:  # OCI allows mediaType to be absent: tell by the shape
        kind = OCI_INDEX if "manifests" in data else OCI_MANIFEST
    if data.get("schemaVersion") != 2:
        raise RegistryFormatError(f"manifest schemaVersion {data.get('schemaVersion')!r} "
                                  "is not supported (schema 2 and OCI only)")
    if kind in INDEX_TYPES:
        items = data.get("manifests")
        if not isinstance(items, list):
            raise RegistryFormatError("the index has no manifests list")
        return Index(tuple(_descriptor(d, f"index entry {n}") for n, d in enumerate(items)))
    if kind not in MANIFEST_TYPES:
        raise RegistryFormatError(f"manifest media type {kind!r} is not supported")
    layers = data.get("layers")
    if not isinstance(layers, list):
        raise RegistryFormatError("the manifest has no layers list")
    if len(layers) > MAX_LAYERS:
        raise RegistryFormatError(f"the manifest has {len(layers)} layers, over {MAX_LAYERS}")
    artifact = data.get("artifactType")
    return Manifest(_descriptor(data.get("config"), "the config"),
                    tuple(_descriptor(d, f"layer {n}") for n, d in enumerate(layers)),
                    artifact if isinstance(artifact, str) else None)


def choose_platform(index: Index, platform: tuple[str, str] = PLATFORM) -> Descriptor:
    """The index's manifest for `platform` (linux/amd64); RegistryFormatError naming the
    platforms it has otherwise."""
    for item in index.manifests:
        if item.platform == platform and item.media_type in MANIFEST_TYPES:
            return item
    offered = sorted({"/".join(m.platform) for m in index.manifests if m.platform})
    raise RegistryFormatError(f"the image has no {'/'.join(platform)} variant (it has "
                              f"{', '.join(offered) or 'no platform entries'})")


def image_layers(manifest: Manifest) -> tuple[Descriptor, ...]:
    """The layers of a container image, bottom first; each a tar, plain or gzip."""
    for layer in manifest.layers:
        if layer.media_type == SIF_LAYER:
            raise RegistryFormatError("this is a SIF artifact: name it oras://, not docker://")
        if layer.media_type not in GZIP_LAYERS | TAR_LAYERS:
            raise RegistryFormatError(f"layer {layer.digest} has media type "
                                      f"{layer.media_type!r}; only tar and tar+gzip layers "
                                      "are supported")
    if not manifest.layers:
        raise RegistryFormatError("the image has no layers")
    return manifest.layers


def sif_layer(manifest: Manifest) -> Descriptor:
    """The SIF file of an oras:// artifact: its one layer of the Sylabs SIF media type."""
    sifs = [layer for layer in manifest.layers if layer.media_type == SIF_LAYER]
    if len(sifs) != 1:
        raise RegistryFormatError(f"the artifact has {len(sifs)} layers of media type "
                                  f"{SIF_LAYER}, not exactly one")
    return sifs[0]


def config_environment(body: bytes) -> dict[str, str]:
    """The image config's `config.Env` ("NAME=VALUE" strings) as a mapping; names that
    are not shell names are left out (the runtime could not export them)."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RegistryFormatError("the image config is not JSON") from None
    config = data.get("config") if isinstance(data, dict) else None
    env = config.get("Env") if isinstance(config, dict) else None
    result: dict[str, str] = {}
    for item in env if isinstance(env, list) else []:
        if isinstance(item, str):
            name, sep, value = item.partition("=")
            if sep and _SHELL_NAME.fullmatch(name):
                result[name] = value
    return result
