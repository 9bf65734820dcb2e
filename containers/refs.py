"""Image references a job may name, parsed whole (re.fullmatch, through TextRules).

- `docker://[REGISTRY/]PATH[:TAG][@sha256:DIGEST]`: an OCI image. No registry means Docker
  Hub, as docker and apptainer read it (`ubuntu` is `docker.io/library/ubuntu`).
- `oras://REGISTRY/PATH[:TAG][@sha256:DIGEST]`: a SIF file stored in an OCI registry.
- `library://[HOST/]ENTITY/COLLECTION/CONTAINER[:TAG|:sha256.DIGEST]`: a SIF file in a
  Sylabs-style library; 1-3 path parts without a host, exactly 3 with one (apptainer's rule).
- `https://HOST[:PORT]/PATH[?QUERY]`: a SIF file on a web server (no credentials in it).
- `upload:<id>`: a SIF file the owner uploaded to the gateway (`gridgate upload` prints it).

A registry is recognised as docker does it: the first part has a dot or a port, or is
`localhost`. Digests are sha256 only; a `library://` digest is written `:sha256.<hex>` there
and held as `sha256:<hex>` here like the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from containers.errors import InvalidImageRef
from rules.text import TextRule


class RefKind(StrEnum):
    DOCKER = "docker"
    ORAS = "oras"
    LIBRARY = "library"
    HTTPS = "https"
    UPLOAD = "upload"


# Parts shared by the rules below (distribution/reference's grammar, ASCII classes).
_LABEL = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9])"
_HOST = rf"{_LABEL}(?:\.{_LABEL})*"
_PORT = r"[0-9]{1,5}"
_REGISTRY = rf"(?:{_LABEL}(?:\.{_LABEL})+|localhost)(?::{_PORT})?|{_LABEL}:{_PORT}"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_SHA256 = r"[a-f0-9]{64}"
# RFC 3986 path and query characters (unreserved, sub-delims, ':', '@', '%').
_URL_CHARS = r"[A-Za-z0-9._~!$&'()*+,;=:@%-]"

REGISTRY_REF = TextRule(
    "registry image reference",
    rf"(?:(?P<registry>{_REGISTRY})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@sha256:(?P<digest>{_SHA256}))?",
    "write [REGISTRY/]PATH[:TAG][@sha256:DIGEST], e.g. docker://docker.io/library/"
    "ubuntu:22.04: the path in lowercase letters, digits and '.', '_', '-' between '/', "
    "the tag at most 128 letters, digits, '.', '_', '-', the digest 64 lowercase hex digits")
LIBRARY_REF = TextRule(
    "library image reference",
    rf"(?:(?P<host>{_HOST}(?::{_PORT})?)/(?=[^/]+/[^/]+/[^/]+\Z))?"
    rf"(?P<path>{_COMPONENT}(?:/{_COMPONENT}){{0,2}})"
    rf"(?::(?:sha256\.(?P<digest>{_SHA256})|(?P<tag>{_TAG})))?",
    "write [HOST/]ENTITY/COLLECTION/CONTAINER[:TAG] or ...:sha256.DIGEST, e.g. "
    "library://alpine:3.19 or library://example.org/lab/tools/app:1.0")
HTTPS_URL = TextRule(
    "https image URL",
    rf"(?P<host>{_HOST})(?::(?P<port>{_PORT}))?(?P<path>(?:/{_URL_CHARS}*)+)"
    rf"(?:\?(?P<query>(?:{_URL_CHARS}|[/?])*))?",
    "write https://HOST[:PORT]/PATH[?QUERY] with the path of a SIF file, e.g. "
    "https://example.org/images/app.sif (no user:password@, no #fragment, no spaces)")
UPLOAD_ID = TextRule(
    "upload id", r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "write upload:<id> with the id `gridgate upload` printed (a UUID such as "
    "3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55)")

FORMS = ("docker://[REGISTRY/]PATH[:TAG][@sha256:DIGEST], oras://REGISTRY/PATH[:TAG]"
         "[@sha256:DIGEST], library://[HOST/]ENTITY/COLLECTION/CONTAINER[:TAG], "
         "https://HOST/PATH (a SIF file) or upload:<id>")
DOCKER_HUB = "docker.io"
MAX_REF_CHARS = 2048
MAX_NAME_CHARS = 255  # docker's limit on REGISTRY/PATH


@dataclass(frozen=True)
class ImageRef:
    """One parsed image reference: what a stager needs to fetch and cache it.

    `host`: the registry (docker, oras), the library host ("" = the runtime's default
    library), the web server; "" for uploads. `path`: the repository path, the library's
    ENTITY/COLLECTION/CONTAINER, the URL path, or the upload id. `digest`: "sha256:<hex>".
    """

    kind: RefKind
    host: str
    path: str
    tag: str | None = None
    digest: str | None = None
    port: int | None = None  # https only (registries keep theirs in `host`)
    query: str | None = None  # https only

    @property
    def uri(self) -> str:
        """The reference in canonical form, as the runtime or the gateway reads it."""
        if self.kind is RefKind.UPLOAD:
            return f"upload:{self.path}"
        if self.kind is RefKind.HTTPS:
            port = f":{self.port}" if self.port is not None else ""
            query = f"?{self.query}" if self.query is not None else ""
            return f"https://{self.host}{port}{self.path}{query}"
        host = f"{self.host}/" if self.host else ""
        text = f"{self.kind.value}://{host}{self.path}"
        if self.kind is RefKind.LIBRARY:
            if self.digest is not None:
                return f"{text}:sha256.{self.digest.removeprefix('sha256:')}"
            return f"{text}:{self.tag}" if self.tag is not None else text
        text += f":{self.tag}" if self.tag is not None else ""
        return text + (f"@{self.digest}" if self.digest is not None else "")

    @property
    def is_sif(self) -> bool:
        """True for a SIF file (every form but docker://, an OCI image)."""
        return self.kind is not RefKind.DOCKER

    @property
    def from_network(self) -> bool:
        """True when the bytes come from a registry or web server (not the gateway)."""
        return self.kind is not RefKind.UPLOAD


def parse_image_ref(text: str) -> ImageRef:
    """The ImageRef `text` names; InvalidImageRef saying which form to write otherwise."""
    if len(text) > MAX_REF_CHARS:
        raise InvalidImageRef(f"an image reference is at most {MAX_REF_CHARS} characters")
    scheme, sep, rest = text.partition("://")
    if text.startswith("upload:"):
        return _upload(text.removeprefix("upload:"))
    if not sep:
        raise InvalidImageRef(f"{text!r} is not an image reference: write {FORMS}")
    if scheme in ("docker", "oras"):
        return _registry(RefKind(scheme), rest)
    if scheme == "library":
        return _library(rest)
    if scheme == "https":
        return _https(rest)
    if scheme == "http":
        raise InvalidImageRef("images are fetched over https only: write https://")
    raise InvalidImageRef(f"{scheme + '://'!r} is not an image source the gateway accepts: "
                          f"write {FORMS}")


def _registry(kind: RefKind, rest: str) -> ImageRef:
    match = REGISTRY_REF.fullmatch(rest)
    if match is None:
        shown = f"{kind.value}://{rest}"
        raise InvalidImageRef(f"{shown!r} is not a valid {REGISTRY_REF.what}: "
                              f"{REGISTRY_REF.hint}")
    registry, path = match["registry"], match["path"]
    if registry is None:
        if kind is RefKind.ORAS:
            raise InvalidImageRef("oras:// needs the registry, e.g. oras://ghcr.io/lab/app:1.0")
        registry = DOCKER_HUB
    if kind is RefKind.DOCKER and registry == "index.docker.io":
        registry = DOCKER_HUB  # docker's own normalisation
    if kind is RefKind.DOCKER and registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"  # Docker Hub's official images
    if len(registry) + 1 + len(path) > MAX_NAME_CHARS:
        raise InvalidImageRef(f"REGISTRY/PATH is at most {MAX_NAME_CHARS} characters")
    digest = match["digest"]
    return ImageRef(kind, registry, path, match["tag"],
                    f"sha256:{digest}" if digest is not None else None)


def _library(rest: str) -> ImageRef:
    if "@" in rest:
        raise InvalidImageRef("library:// gives a digest as :sha256.<64 hex digits>, not "
                              "@sha256:")
    match = LIBRARY_REF.fullmatch(rest)
    if match is None:
        raise InvalidImageRef(f"{'library://' + rest!r} is not a valid {LIBRARY_REF.what}: "
                              f"{LIBRARY_REF.hint}")
    tag = match["tag"]
    if tag is not None and tag.startswith("sha256."):
        raise InvalidImageRef("a library:// digest is sha256. followed by 64 lowercase hex "
                              "digits")
    digest = match["digest"]
    return ImageRef(RefKind.LIBRARY, match["host"] or "", match["path"], tag,
                    f"sha256:{digest}" if digest is not None else None)


def _https(rest: str) -> ImageRef:
    authority = rest.partition("/")[0]
    if "@" in authority:
        raise InvalidImageRef("an https image URL must not carry a user or password: give "
                              "a URL that needs none (e.g. a pre-signed one)")
    if "#" in rest:
        raise InvalidImageRef("an https image URL must not have a #fragment")
    match = HTTPS_URL.fullmatch(rest)
    if match is None:
        raise InvalidImageRef(f"{'https://' + rest!r} is not a valid {HTTPS_URL.what}: "
                              f"{HTTPS_URL.hint}")
    path = match["path"]
    if path.endswith("/") or "//" in path:
        raise InvalidImageRef(f"{'https://' + rest!r} must name a file: {HTTPS_URL.hint}")
    port = match["port"]
    if port is not None and not 0 < int(port) < 65536:
        raise InvalidImageRef(f"port {port} is not between 1 and 65535")
    return ImageRef(RefKind.HTTPS, match["host"].lower(), path,
                    port=int(port) if port is not None else None, query=match["query"])


def _upload(upload_id: str) -> ImageRef:
    problem = UPLOAD_ID.problem(upload_id)
    if problem is not None:
        raise InvalidImageRef(problem)
    return ImageRef(RefKind.UPLOAD, "", upload_id.lower())
