"""https:// job inputs: fetched into the gateway store, never from a private network.

Every hop's host name is resolved here, and every address it resolves to must be a
public one (`is_public_address`); the connection then goes to that checked address
(TLS still verifies the host name), so a DNS answer cannot change between check and
use. Redirects are followed here, at most `https_max_redirects`, each one checked the
same way, and only to https. The body is streamed into a temporary file in the store,
counted against `https_input_max_bytes` and hashed, then stored by its sha256.
"""

from __future__ import annotations

import hashlib
import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urljoin, urlsplit

from adapters.transfer import LocalFile
from adapters.transfer.staging import StagedFile
from gateway.services.data.input_sources import InputUnavailable, ResolvedInput
from gateway.settings import Settings
from gateway.store import BlobStore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
REDIRECTS = frozenset({301, 302, 303, 307, 308})
READ_BLOCK = 1 << 20


# RFC 6052's well-known NAT64 prefix carries an IPv4 address in its last 32 bits; where a
# NAT64 gateway serves it, 64:ff9b::7f00:1 reaches 127.0.0.1. The local-use prefix
# (RFC 8215) maps to whatever the operator chose: never public.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address leads to (IPv4-mapped, 6to4, Teredo server and
    client, NAT64), or () for a plain IPv6 address."""
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo
    if ip in _NAT64:
        return (ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF),)
    return ()


def is_public_address(ip: IPAddress) -> bool:
    """False for loopback, private, link-local, multicast, reserved, unspecified and
    other special-purpose addresses.

    An IPv6 form that carries an IPv4 address (IPv4-mapped, 6to4, Teredo, NAT64) is
    judged by that address alone: the standard library's verdict on the IPv6 prefixes
    themselves changed between patch releases (3.11.2 and 3.13 count all of 2002::/16
    private, 3.11.7 does not), and the host reached is the embedded one anyway.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(ip)
        if embedded:
            return all(map(is_public_address, embedded))
        if ip in _NAT64_LOCAL:
            return False
    return not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_multicast
                or ip.is_reserved or ip.is_unspecified or not ip.is_global)


@dataclass(frozen=True)
class Fetched:
    """What a GET brought: the final URL, the body's size and sha256 (0 and "" for a 304),
    and the validators a later conditional GET can send (None when the server gave none,
    or said no-store)."""

    url: str
    size: int
    sha256: str
    not_modified: bool = False
    etag: str | None = None
    last_modified: str | None = None


def resolve_checked(host: str, port: int, allowed: Callable[[IPAddress], bool]) -> str:
    """The address to connect to: `host` resolved, every answer allowed, else refused."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InputUnavailable(f"cannot resolve {host}: {exc}") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    refused = [str(a) for a in addresses if not allowed(a)]
    if not addresses or refused:
        raise InputUnavailable(f"{host} resolves to {', '.join(refused) or 'nothing'}, which "
                               "is not a public address; the gateway fetches only from "
                               "public addresses")
    return str(addresses[0])


class PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to an address already checked, verifying the certificate for `host`."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = _no_delay(socket.create_connection((self._address, self.port), self.timeout))
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


class PinnedHTTP(http.client.HTTPConnection):
    """Plain HTTP to a checked address: for tests, and webhook targets in admin ranges."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = _no_delay(socket.create_connection((self._address, self.port),
                                                       self.timeout))


def _no_delay(sock: socket.socket) -> socket.socket:
    # As http.client's own connect does: on a kept-alive connection, Nagle's algorithm
    # would hold a request's last bytes until the peer's delayed ACK (some 40 ms).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def fetch(url: str, sink: IO[bytes], *, max_bytes: int, max_redirects: int,
          timeout: float, schemes: tuple[str, ...] = ("https",),
          allowed: Callable[[IPAddress], bool] = is_public_address,
          conditions: Mapping[str, str] | None = None) -> Fetched:
    """GET `url` into `sink` following checked redirects; InputUnavailable on refusal.
    `conditions`: If-None-Match / If-Modified-Since, sent at every hop; a 304 writes
    nothing and comes back `not_modified`."""
    for _ in range(max_redirects + 1):
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in schemes or not parts.hostname:
            raise InputUnavailable(f"{url} is not an {'/'.join(schemes)} URL; only those are "
                                   "fetched (redirects included)")
        port = parts.port or (443 if scheme == "https" else 80)
        address = resolve_checked(parts.hostname, port, allowed)
        kind = PinnedHTTPS if scheme == "https" else PinnedHTTP
        conn = kind(parts.hostname, port, address, timeout)
        try:
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            conn.request("GET", target,
                         headers={"User-Agent": "gridgate-stage-in", **(conditions or {})})
            response = conn.getresponse()
            if response.status == 304 and conditions:
                return Fetched(url, 0, "", not_modified=True)
            if response.status in REDIRECTS:
                location = response.getheader("Location")
                if not location:
                    raise InputUnavailable(f"{url} redirected without a Location")
                url = urljoin(url, location)
                continue
            if response.status != 200:
                raise InputUnavailable(f"{url} answered HTTP {response.status} "
                                       f"{response.reason}")
            size, sha256 = _read_body(response, sink, max_bytes, url)
            if "no-store" in (response.getheader("Cache-Control") or "").lower():
                return Fetched(url, size, sha256)
            return Fetched(url, size, sha256, etag=response.getheader("ETag"),
                           last_modified=response.getheader("Last-Modified"))
        except (OSError, http.client.HTTPException) as exc:
            raise InputUnavailable(f"fetching {url} failed: {exc}") from None
        finally:
            conn.close()
    raise InputUnavailable(f"more than {max_redirects} redirects; gave up at {url}")


def _read_body(response: http.client.HTTPResponse, sink: IO[bytes], max_bytes: int,
               url: str) -> tuple[int, str]:
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise InputUnavailable(f"{url} is {declared} bytes, over the limit of {max_bytes} "
                               f"(https_input_max_bytes) by {int(declared) - max_bytes}")
    digest, size = hashlib.sha256(), 0
    while block := response.read(READ_BLOCK):
        size += len(block)
        if size > max_bytes:
            raise InputUnavailable(f"{url} sent more than the limit of {max_bytes} bytes "
                                   "(https_input_max_bytes)")
        digest.update(block)
        sink.write(block)
    return size, digest.hexdigest()


def https_input(settings: Settings, store: BlobStore, url: str, *,
                schemes: tuple[str, ...] = ("https",),
                allowed: Callable[[IPAddress], bool] = is_public_address) -> ResolvedInput:
    """Fetch `url` into a private incoming file of the store and return it as a stageable
    input whose `scratch` the caller removes after staging (it is no one's upload and
    counts against no quota; the worker sweeps what crashes leave behind)."""
    tmp: Path = store.new_incoming()
    try:
        with tmp.open("wb") as sink:
            fetched = fetch(url, sink, max_bytes=settings.https_input_max_bytes,
                            max_redirects=settings.https_max_redirects,
                            timeout=settings.https_timeout_seconds, schemes=schemes,
                            allowed=allowed)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return ResolvedInput(LocalFile(tmp), StagedFile(fetched.sha256, fetched.size), scratch=tmp)
