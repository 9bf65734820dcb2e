"""Who is on the other end of a request: its address, and whether the way there is safe
for secrets (https, or a loopback connection that never leaves the host)."""

from __future__ import annotations

import ipaddress

from starlette.requests import Request

from gateway.settings import Settings


def client_address(request: Request) -> str:
    """The peer's address as the server saw it ("local" for a unix socket)."""
    return request.client.host if request.client else "local"


def is_loopback(request: Request) -> bool:
    """True for 127.0.0.0/8, ::1 and unix sockets; anything unparseable is remote."""
    if request.client is None:
        return True
    try:
        return ipaddress.ip_address(request.client.host).is_loopback
    except ValueError:
        return False


def is_secure(request: Request, settings: Settings) -> bool:
    """Whether secrets in this request travelled encrypted or stayed on this host.
    `X-Forwarded-Proto` counts only with `trust_proxy_tls` (a TLS proxy in front sets
    it); without that setting anyone could send the header."""
    if settings.trust_proxy_tls:
        forwarded = request.headers.get("x-forwarded-proto")
        if forwarded:
            return forwarded.split(",")[0].strip().lower() == "https"
    return request.url.scheme == "https" or is_loopback(request)
