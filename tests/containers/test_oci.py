"""containers.image.oci: registry coordinates and manifest choice, table-driven, no I/O."""

from __future__ import annotations

import json

import pytest

from containers.errors import RegistryFormatError
from containers.image import oci
from containers.refs import parse_image_ref

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64
D3 = "sha256:" + "3" * 64
GZ = "application/vnd.oci.image.layer.v1.tar+gzip"


@pytest.mark.parametrize(("text", "registry", "api_host", "repository", "reference"), [
    ("docker://ubuntu", "docker.io", "registry-1.docker.io", "library/ubuntu", "latest"),
    ("docker://ubuntu:22.04", "docker.io", "registry-1.docker.io", "library/ubuntu", "22.04"),
    ("docker://lab/app:1", "docker.io", "registry-1.docker.io", "lab/app", "1"),
    ("docker://index.docker.io/lab/app", "docker.io", "registry-1.docker.io", "lab/app",
     "latest"),
    ("docker://ghcr.io/lab/app:1.0", "ghcr.io", "ghcr.io", "lab/app", "1.0"),
    ("docker://localhost:5000/a/b/c:t", "localhost:5000", "localhost:5000", "a/b/c", "t"),
    (f"docker://ghcr.io/lab/app:1.0@{D1}", "ghcr.io", "ghcr.io", "lab/app", D1),
    (f"oras://127.0.0.1:5000/sif/app@{D2}", "127.0.0.1:5000", "127.0.0.1:5000", "sif/app", D2),
    ("oras://ghcr.io/lab/sif", "ghcr.io", "ghcr.io", "lab/sif", "latest"),
])
def test_registry_target(text: str, registry: str, api_host: str, repository: str,
                         reference: str) -> None:
    target = oci.registry_target(parse_image_ref(text))
    assert (target.registry, target.api_host, target.repository, target.reference) == (
        registry, api_host, repository, reference)
    assert target.pinned is reference.startswith("sha256:")


@pytest.mark.parametrize("text", ["https://example.org/a.sif",
                                  "upload:3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55",
                                  "library://alpine:3.19"])
def test_registry_target_refuses_other_sources(text: str) -> None:
    with pytest.raises(RegistryFormatError, match="not a registry image"):
        oci.registry_target(parse_image_ref(text))


def _desc(media: str, digest: str, size: int = 10, **extra: object) -> dict[str, object]:
    return {"mediaType": media, "digest": digest, "size": size, **extra}


def _index(media: str, entries: list[tuple[str, str, str]]) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": media, "manifests": [
        _desc(oci.OCI_MANIFEST, d, platform={"os": os_, "architecture": arch})
        for os_, arch, d in entries]}).encode()


@pytest.mark.parametrize(("media", "entries", "chosen"), [
    (oci.OCI_INDEX, [("linux", "arm64", D1), ("linux", "amd64", D2)], D2),
    (oci.DOCKER_LIST, [("linux", "amd64", D3), ("windows", "amd64", D1)], D3),
    (oci.OCI_INDEX, [("linux", "amd64", D1), ("linux", "amd64", D2)], D1),
])
def test_choose_platform(media: str, entries: list[tuple[str, str, str]], chosen: str) -> None:
    index = oci.parse_document(_index(media, entries), media)
    assert isinstance(index, oci.Index)
    assert oci.choose_platform(index).digest == chosen


def test_choose_platform_names_what_there_is() -> None:
    index = oci.parse_document(_index(oci.OCI_INDEX, [("linux", "arm64", D1),
                                                      ("linux", "ppc64le", D2)]), None)
    assert isinstance(index, oci.Index)
    with pytest.raises(RegistryFormatError,
                       match=r"no linux/amd64 variant .it has linux/arm64, linux/ppc64le"):
        oci.choose_platform(index)


def _manifest(layers: list[dict[str, object]], media: str | None = oci.OCI_MANIFEST,
              **extra: object) -> bytes:
    doc: dict[str, object] = {"schemaVersion": 2,
                              "config": _desc("application/vnd.oci.image.config.v1+json", D1),
                              "layers": layers, **extra}
    if media is not None:
        doc["mediaType"] = media
    return json.dumps(doc).encode()


@pytest.mark.parametrize(("body", "content_type", "layers"), [
    (_manifest([_desc(GZ, D2), _desc(GZ, D3)]), oci.OCI_MANIFEST, (D2, D3)),
    (_manifest([_desc("application/vnd.docker.image.rootfs.diff.tar.gzip", D2)],
               oci.DOCKER_MANIFEST), oci.DOCKER_MANIFEST, (D2,)),
    (_manifest([_desc("application/vnd.oci.image.layer.v1.tar", D3)], None),
     "application/json", (D3,)),
])
def test_image_layers(body: bytes, content_type: str, layers: tuple[str, ...]) -> None:
    manifest = oci.parse_document(body, content_type)
    assert isinstance(manifest, oci.Manifest)
    assert tuple(d.digest for d in oci.image_layers(manifest)) == layers


@pytest.mark.parametrize(("body", "message"), [
    (b"not json", "not JSON"),
    (b"[]", "not a JSON object"),
    (json.dumps({"schemaVersion": 1, "fsLayers": []}).encode(), "schemaVersion 1"),
    (_manifest([_desc(GZ, "md5:abc")]), "only sha256"),
    (_manifest([_desc(GZ, "sha256:" + "A" * 64)]), "only sha256"),
    (_manifest([_desc(GZ, D2, size=-1)]), "no valid size"),
    (_manifest([_desc(GZ, D2, size=True)]), "no valid size"),
    (_manifest([{"digest": D2, "size": 1}]), "lacks its mediaType"),
    (_manifest([], media="application/vnd.example+json"), "media type .* not supported"),
    (_manifest([_desc(GZ, D2)] * (oci.MAX_LAYERS + 1)), "over 256"),
])
def test_parse_document_refuses(body: bytes, message: str) -> None:
    with pytest.raises(RegistryFormatError, match=message):
        oci.parse_document(body, None)


@pytest.mark.parametrize(("layers", "message"), [
    ([], "no layers"),
    ([_desc("application/vnd.oci.image.layer.v1.tar+zstd", D2)], "only tar and tar.gzip"),
    ([_desc(oci.SIF_LAYER, D2)], "name it oras://"),
])
def test_image_layers_refuses(layers: list[dict[str, object]], message: str) -> None:
    manifest = oci.parse_document(_manifest(layers), None)
    assert isinstance(manifest, oci.Manifest)
    with pytest.raises(RegistryFormatError, match=message):
        oci.image_layers(manifest)


@pytest.mark.parametrize(("layers", "found"), [
    ([_desc(oci.SIF_LAYER, D2)], D2),
    ([_desc("application/vnd.oci.empty.v1+json", D1), _desc(oci.SIF_LAYER, D3)], D3),
    ([], None),
    ([_desc(GZ, D2)], None),
    ([_desc(oci.SIF_LAYER, D2), _desc(oci.SIF_LAYER, D3)], None),
])
def test_sif_layer(layers: list[dict[str, object]], found: str | None) -> None:
    manifest = oci.parse_document(_manifest(layers), None)
    assert isinstance(manifest, oci.Manifest)
    if found is None:
        with pytest.raises(RegistryFormatError, match="not exactly one"):
            oci.sif_layer(manifest)
    else:
        assert oci.sif_layer(manifest).digest == found


@pytest.mark.parametrize(("config", "env"), [
    ({"config": {"Env": ["PATH=/usr/bin:/bin", "A=b=c", "EMPTY="]}},
     {"PATH": "/usr/bin:/bin", "A": "b=c", "EMPTY": ""}),
    ({"config": {"Env": ["1BAD=x", "NOEQUALS", 3, "ok_2=y"]}}, {"ok_2": "y"}),
    ({"config": {}}, {}),
    ({}, {}),
    ([], {}),
])
def test_config_environment(config: object, env: dict[str, str]) -> None:
    assert oci.config_environment(json.dumps(config).encode()) == env


def test_config_environment_refuses_non_json() -> None:
    with pytest.raises(RegistryFormatError, match="config is not JSON"):
        oci.config_environment(b"\xff")
