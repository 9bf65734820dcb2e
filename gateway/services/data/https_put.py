"""Sending a file by HTTP PUT (a job's `deliver` to an https:// URL, e.g. a presigned
one), never to a private network: the host is resolved and checked as https inputs'
are (gateway.services.data.https_fetch), the connection goes to the checked address, and
a redirect is a failure (a PUT's body is not sent twice to a place nobody named)."""

from __future__ import annotations

import http.client
from collections.abc import Callable
from typing import BinaryIO
from urllib.parse import urlsplit

from gateway.domain.errors import GatewayError
from gateway.services.data.https_fetch import (
    IPAddress,
    PinnedHTTP,
    PinnedHTTPS,
    is_public_address,
    resolve_checked,
)
from gateway.services.data.input_sources import InputUnavailable


class PutFailed(GatewayError):
    """The destination did not take the file."""

    title = "Upload failed"


def put(url: str, body: BinaryIO, size: int, *, timeout: float,
        schemes: tuple[str, ...] = ("https",),
        allowed: Callable[[IPAddress], bool] = is_public_address) -> None:
    """PUT the `size` bytes of `body` to `url`; PutFailed unless it answers 2xx."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in schemes or not parts.hostname:
        raise PutFailed(f"{url} is not an {'/'.join(schemes)} URL")
    port = parts.port or (443 if scheme == "https" else 80)
    try:
        address = resolve_checked(parts.hostname, port, allowed)
    except InputUnavailable as exc:
        raise PutFailed(exc.detail) from None
    conn = (PinnedHTTPS if scheme == "https" else PinnedHTTP)(parts.hostname, port, address,
                                                              timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        conn.request("PUT", target, body=body, headers={
            "User-Agent": "gridgate-stage-out", "Content-Length": str(size),
            "Content-Type": "application/octet-stream"})
        response = conn.getresponse()
        response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise PutFailed(f"sending to {url} failed: {exc}") from None
    finally:
        conn.close()
    if not 200 <= response.status < 300:
        raise PutFailed(f"{url} answered the PUT with HTTP {response.status} "
                        f"{response.reason}")
