"""Image references: every accepted form parsed to its fields, every refusal says what to write."""

from __future__ import annotations

import pytest

from containers.errors import ContainerError, InvalidImageRef
from containers.refs import ImageRef, RefKind, parse_image_ref

D1 = "a" * 64
D2 = "0123456789abcdef" * 4
UPLOAD = "3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55"

# (text, parsed, canonical uri)
VALID = [
    ("docker://ubuntu", ImageRef(RefKind.DOCKER, "docker.io", "library/ubuntu"),
     "docker://docker.io/library/ubuntu"),
    ("docker://ubuntu:22.04", ImageRef(RefKind.DOCKER, "docker.io", "library/ubuntu", "22.04"),
     "docker://docker.io/library/ubuntu:22.04"),
    ("docker://index.docker.io/ubuntu", ImageRef(RefKind.DOCKER, "docker.io", "library/ubuntu"),
     "docker://docker.io/library/ubuntu"),
    ("docker://lab/app:v1", ImageRef(RefKind.DOCKER, "docker.io", "lab/app", "v1"),
     "docker://docker.io/lab/app:v1"),
    (f"docker://ghcr.io/lab/mpi-app@sha256:{D1}",
     ImageRef(RefKind.DOCKER, "ghcr.io", "lab/mpi-app", None, f"sha256:{D1}"),
     f"docker://ghcr.io/lab/mpi-app@sha256:{D1}"),
    (f"docker://registry.example.org:5000/a/b/c:1.2_rc-3@sha256:{D2}",
     ImageRef(RefKind.DOCKER, "registry.example.org:5000", "a/b/c", "1.2_rc-3", f"sha256:{D2}"),
     f"docker://registry.example.org:5000/a/b/c:1.2_rc-3@sha256:{D2}"),
    ("docker://localhost/app", ImageRef(RefKind.DOCKER, "localhost", "app"),
     "docker://localhost/app"),
    ("docker://myreg:5000/app", ImageRef(RefKind.DOCKER, "myreg:5000", "app"),
     "docker://myreg:5000/app"),
    ("docker://my_org/app__x.y", ImageRef(RefKind.DOCKER, "docker.io", "my_org/app__x.y"),
     "docker://docker.io/my_org/app__x.y"),
    ("oras://ghcr.io/lab/app.sif:1.0", ImageRef(RefKind.ORAS, "ghcr.io", "lab/app.sif", "1.0"),
     "oras://ghcr.io/lab/app.sif:1.0"),
    (f"oras://ghcr.io/lab/app@sha256:{D1}",
     ImageRef(RefKind.ORAS, "ghcr.io", "lab/app", None, f"sha256:{D1}"),
     f"oras://ghcr.io/lab/app@sha256:{D1}"),
    ("library://alpine", ImageRef(RefKind.LIBRARY, "", "alpine"), "library://alpine"),
    ("library://alpine:3.19", ImageRef(RefKind.LIBRARY, "", "alpine", "3.19"),
     "library://alpine:3.19"),
    ("library://lab/tools/app:1.0", ImageRef(RefKind.LIBRARY, "", "lab/tools/app", "1.0"),
     "library://lab/tools/app:1.0"),
    ("library://example.org/lab/tools/app:1.0",
     ImageRef(RefKind.LIBRARY, "example.org", "lab/tools/app", "1.0"),
     "library://example.org/lab/tools/app:1.0"),
    (f"library://lab/tools/app:sha256.{D2}",
     ImageRef(RefKind.LIBRARY, "", "lab/tools/app", None, f"sha256:{D2}"),
     f"library://lab/tools/app:sha256.{D2}"),
    ("https://Example.org/images/app.sif",
     ImageRef(RefKind.HTTPS, "example.org", "/images/app.sif"),
     "https://example.org/images/app.sif"),
    ("https://files.example.org:8443/x/app.sif?X-Amz-Signature=ab%2Fc&x=1",
     ImageRef(RefKind.HTTPS, "files.example.org", "/x/app.sif", port=8443,
              query="X-Amz-Signature=ab%2Fc&x=1"),
     "https://files.example.org:8443/x/app.sif?X-Amz-Signature=ab%2Fc&x=1"),
    (f"upload:{UPLOAD}", ImageRef(RefKind.UPLOAD, "", UPLOAD), f"upload:{UPLOAD}"),
    (f"upload:{UPLOAD.upper()}", ImageRef(RefKind.UPLOAD, "", UPLOAD), f"upload:{UPLOAD}"),
]


@pytest.mark.parametrize(("text", "parsed", "uri"), VALID, ids=[v[0][:60] for v in VALID])
def test_accepted_forms_parse_to_their_fields(text: str, parsed: ImageRef, uri: str) -> None:
    ref = parse_image_ref(text)
    assert ref == parsed
    assert ref.uri == uri
    # The canonical form reads back as the same reference.
    assert parse_image_ref(ref.uri) == ref


# (text, a part of the message that says what to write)
INVALID = [
    ("ubuntu:22.04", "is not an image reference: write docker://"),
    ("", "is not an image reference"),
    ("docker://", "is not a valid registry image reference"),
    ("docker://Ubuntu", "lowercase letters"),
    ("docker://ubuntu:22.04\n", "is not a valid registry image reference"),
    ("docker://ubuntu:22.04 ", "is not a valid registry image reference"),
    ("docker://ubuntu@sha256:abc", "64 lowercase hex digits"),
    (f"docker://ubuntu@sha512:{D1}", "is not a valid registry image reference"),
    (f"docker://ubuntu@sha256:{D1.upper()}", "64 lowercase hex digits"),
    ("docker://ubuntu:-x", "is not a valid registry image reference"),
    ("docker://ubuntu:" + "t" * 129, "the tag at most 128"),
    ("docker://a/../b", "is not a valid registry image reference"),
    ("docker://a//b", "is not a valid registry image reference"),
    ("docker://-a/b", "is not a valid registry image reference"),
    ("docker://ghcr.io/" + "a" * 250, "at most 255 characters"),
    ("oras://lab/app:1.0", "oras:// needs the registry"),
    (f"library://alpine@sha256:{D1}", "as :sha256.<64 hex digits>"),
    ("library://alpine:sha256.abc", "sha256. followed by 64"),
    ("library://a/b/c/d/e", "is not a valid library image reference"),
    ("library://a/b:1,2", "is not a valid library image reference"),
    ("http://example.org/app.sif", "over https only"),
    ("https://user:pw@example.org/app.sif", "must not carry a user or password"),
    ("https://example.org/app.sif#frag", "must not have a #fragment"),
    ("https://example.org", "is not a valid https image URL"),
    ("https://example.org/", "must name a file"),
    ("https://example.org/a b.sif", "no spaces"),
    ("https://example.org:99999/app.sif", "port 99999 is not between 1 and 65535"),
    ("shub://vsoch/hello-world", "'shub://' is not an image source"),
    ("file:///tmp/app.sif", "'file://' is not an image source"),
    ("upload:not-a-uuid", "write upload:<id> with the id `gridgate upload` printed"),
    (f"upload:{UPLOAD}\n", "is not a valid upload id"),
    ("https://example.org/" + "a" * 2100, "at most 2048 characters"),
]


@pytest.mark.parametrize(("text", "message"), INVALID, ids=[v[0][:40] for v in INVALID])
def test_refusals_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(InvalidImageRef) as caught:
        parse_image_ref(text)
    assert message in str(caught.value)
    # One hierarchy, and a ValueError so pydantic validators can raise it as it is.
    assert isinstance(caught.value, ContainerError)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("text", "is_sif", "from_network"), [
    ("docker://ubuntu", False, True),
    ("oras://ghcr.io/a/b", True, True),
    ("library://alpine", True, True),
    ("https://example.org/a.sif", True, True),
    (f"upload:{UPLOAD}", True, False),
])
def test_what_a_stager_needs_to_know(text: str, is_sif: bool, from_network: bool) -> None:
    ref = parse_image_ref(text)
    assert ref.is_sif is is_sif
    assert ref.from_network is from_network
