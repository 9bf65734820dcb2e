"""The registry v2 API as the gateway reads it (httpx): manifests and blobs of one
repository, anonymously, with the distribution token flow when the registry asks for it.

- `GET /v2/REPO/manifests/REF` with the OCI and Docker schema 2 `Accept` types; the body
  (at most MANIFEST_MAX_BYTES) is hashed, and a digest reference must match it.
- `GET /v2/REPO/blobs/DIGEST`, streamed to a file, counted against a cap and hashed: a
  blob whose sha256 or size is not its descriptor's is refused.
- A 401 with `WWW-Authenticate: Bearer realm=...,service=...,scope=...` fetches a token
  from the realm (anonymously) and tries once more with it (the distribution token spec).
- https only, except for the registries `insecure_registries` lists; redirects (blob
  stores, CDNs) are followed here, at most MAX_REDIRECTS, https only (or to the same
  insecure registry), without the registry's token. Hosts not listed as insecure must
  resolve to public addresses only, as for https:// inputs, and the connection goes to the
  address checked (TLS verifying the name), so a DNS answer cannot change in between.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

from containers.image.oci import ACCEPT, Descriptor, RegistryTarget
from gateway.services.data.https_fetch import IPAddress, is_public_address, resolve_checked
from gateway.services.data.input_sources import InputUnavailable

MANIFEST_MAX_BYTES = 4 * 1024**2  # the distribution registry's own limit
TOKEN_MAX_BYTES = 64 * 1024
MAX_REDIRECTS = 5
READ_BLOCK = 1 << 20
_PARAM = re.compile(r'([A-Za-z]+)="([^"]*)"')


class RegistryPullFailed(InputUnavailable):
    """A registry image the gateway could not pull; the message names the reference."""

    title = "Registry image unavailable"


def bearer_challenge(header: str) -> dict[str, str] | None:
    """The parameters of a `Bearer` WWW-Authenticate challenge, or None for another scheme."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return dict(_PARAM.findall(params))


class RegistryClient:
    """One repository of one registry; `uri` (the job's reference) names it in errors."""

    def __init__(self, target: RegistryTarget, uri: str, *, insecure: frozenset[str],
                 timeout: float, allowed: Callable[[IPAddress], bool] = is_public_address,
                 tls: ssl.SSLContext | None = None) -> None:
        """`allowed` and `tls` (the trusted CAs; None: the system's) are for tests."""
        self.target, self.uri, self.insecure, self.allowed = target, uri, insecure, allowed
        scheme = "http" if target.registry in insecure else "https"
        self.base = f"{scheme}://{target.api_host}/v2/{target.repository}"
        self.http = httpx.Client(timeout=timeout, follow_redirects=False,
                                 verify=tls if tls is not None else True,
                                 headers={"User-Agent": "gridgate-registry-pull"})
        self.token: str | None = None
        self.requests = 0

    def close(self) -> None:
        self.http.close()

    def _fail(self, what: str) -> RegistryPullFailed:
        return RegistryPullFailed(f"pulling {self.uri}: {what}")

    def _allowed(self, url: str) -> str | None:
        """The checked address to connect to for `url` (None: an insecure-listed registry,
        connected to by name); RegistryPullFailed when `url` may not be fetched."""
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        if parts.scheme == "http" and host in self.insecure:
            return None  # listed by the operator: loopback or private registries allowed
        if parts.scheme != "https" or not parts.hostname:
            raise self._fail(f"{url} is not https; only registries listed in "
                             "insecure_registries are reached over plain HTTP")
        try:
            return resolve_checked(parts.hostname, parts.port or 443, self.allowed)
        except InputUnavailable as exc:
            raise self._fail(exc.detail) from None

    def _request(self, url: str, headers: dict[str, str],
                 params: dict[str, str] | None = None) -> httpx.Request:
        """GET `url`, connecting to the address `_allowed` checked (TLS still verifies the
        name: SNI and the certificate check use it), so DNS cannot change in between."""
        address = self._allowed(url)
        target = httpx.URL(url).copy_merge_params(params or {})
        if address is None:
            return self.http.build_request("GET", target, headers=headers)
        pinned = target.copy_with(host=address)
        return self.http.build_request(
            "GET", pinned, headers={**headers, "Host": target.netloc.decode("ascii")},
            extensions={"sni_hostname": target.host})

    @contextlib.contextmanager
    def _get(self, url: str, accept: tuple[str, ...] = ()) -> Iterator[httpx.Response]:
        """The final response of GET `url` (token flow and redirects done), streaming."""
        origin = urlsplit(url).netloc
        authorised = False
        for _ in range(MAX_REDIRECTS + 2):
            headers = {"Accept": ", ".join(accept)} if accept else {}
            if self.token is not None and urlsplit(url).netloc == origin:
                headers["Authorization"] = f"Bearer {self.token}"
            request = self._request(url, headers)
            self.requests += 1
            try:
                response = self.http.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise self._fail(f"the registry at {urlsplit(url).netloc} did not answer "
                                 f"({exc})") from None
            try:
                if response.status_code == 401 and not authorised:
                    challenge = bearer_challenge(response.headers.get("WWW-Authenticate", ""))
                    if challenge is not None and "realm" in challenge:
                        self.token = self._fetch_token(challenge)
                        authorised = True
                        continue
                if response.is_redirect:
                    location = response.headers.get("Location")
                    if not location:
                        raise self._fail(f"{url} redirected without a Location")
                    url = urljoin(url, location)
                    continue
                self._check_status(response)
                try:
                    yield response
                except httpx.HTTPError as exc:  # while the caller read the body
                    raise self._fail(f"the registry at {urlsplit(url).netloc} broke off "
                                     f"({exc})") from None
                return
            finally:
                response.close()
        raise self._fail(f"more than {MAX_REDIRECTS} redirects")

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if status == 200:
            return
        if status == 404:
            sep = "@" if self.target.pinned else ":"
            raise self._fail(f"not found (the registry answered 404 for "
                             f"{self.target.repository}{sep}{self.target.reference} or one "
                             "of its blobs): check the repository and the tag")
        if status in (401, 403):
            raise self._fail(f"unauthorized (HTTP {status}): the gateway pulls anonymously, "
                             "so only public images can be pulled for sites")
        if status == 429:
            raise self._fail("the registry is rate-limiting the gateway (HTTP 429); "
                             "try again later")
        raise self._fail(f"the registry answered HTTP {status} for {response.url}")

    def _fetch_token(self, challenge: dict[str, str]) -> str:
        realm = challenge["realm"]
        params = {"service": challenge.get("service", ""),
                  "scope": challenge.get("scope", f"repository:{self.target.repository}:pull")}
        request = self._request(realm, {}, {k: v for k, v in params.items() if v})
        self.requests += 1
        try:
            response = self.http.send(request)
        except httpx.HTTPError as exc:
            raise self._fail(f"the token service {realm} did not answer ({exc})") from None
        if response.status_code != 200 or len(response.content) > TOKEN_MAX_BYTES:
            raise self._fail(f"unauthorized: the token service {realm} answered HTTP "
                             f"{response.status_code}")
        try:
            data = response.json()
        except ValueError:
            raise self._fail(f"the token service {realm} sent no JSON") from None
        token = data.get("token") or data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise self._fail(f"the token service {realm} sent no token")
        return token

    def manifest(self, reference: str) -> tuple[bytes, str | None, str]:
        """The manifest or index `reference` names: its bytes, Content-Type and digest."""
        with self._get(f"{self.base}/manifests/{reference}", ACCEPT) as response:
            body = bytearray()
            for block in response.iter_bytes():
                body += block
                if len(body) > MANIFEST_MAX_BYTES:
                    raise self._fail(f"the manifest is over {MANIFEST_MAX_BYTES} bytes")
            content_type = response.headers.get("Content-Type")
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        if reference.startswith("sha256:") and digest != reference:
            raise self._fail(f"bad digest: the manifest sent for {reference} hashes to "
                             f"{digest}")
        return bytes(body), content_type, digest

    def blob(self, descriptor: Descriptor, dest: Path, max_bytes: int) -> int:
        """Stream the blob to `dest`, verified against its descriptor; its size."""
        if descriptor.size > max_bytes:
            raise self._fail(f"too big: blob {descriptor.digest} is {descriptor.size} "
                             f"bytes, over the {max_bytes} left of registry_image_max_bytes")
        digest, size = hashlib.sha256(), 0
        with self._get(f"{self.base}/blobs/{descriptor.digest}") as response, \
                dest.open("wb") as sink:
            for block in response.iter_bytes(READ_BLOCK):
                size += len(block)
                if size > descriptor.size:
                    raise self._fail(f"bad digest: blob {descriptor.digest} is longer than "
                                     f"the {descriptor.size} bytes its manifest gives")
                digest.update(block)
                sink.write(block)
        if size != descriptor.size or digest.hexdigest() != descriptor.hex:
            raise self._fail(f"bad digest: blob {descriptor.digest} arrived as "
                             f"sha256:{digest.hexdigest()} ({size} bytes): it is damaged "
                             "or not the one the manifest names")
        return size
