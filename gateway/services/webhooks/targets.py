"""Webhook targets: checked like every URL the gateway fetches (gateway.services.data.
https_fetch). A target must resolve to public addresses only, unless the admin allows a
range (`webhook_allowed_ranges`), and plain http is allowed only inside such a range.
The check is made when a subscription is created and again at every connection, to the
very address checked, so a DNS answer changed since cannot reach a private network.
Requests have a short timeout, follow no redirects, and read a bounded response."""

from __future__ import annotations

import http.client
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from urllib.parse import urlsplit

from gateway.domain.errors import Invalid
from gateway.services.data.https_fetch import (
    IPAddress,
    PinnedHTTP,
    PinnedHTTPS,
    is_public_address,
    resolve_checked,
)
from gateway.services.data.input_sources import InputUnavailable
from gateway.services.webhooks.connections import Connections, Key
from gateway.settings import Settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
MAX_URL = 2000
# Printable ASCII without spaces: what a URL a person typed may hold.
URL_TEXT = re.compile(r"[!-~]{1,2000}")


class TargetRefused(Exception):
    """A target the gateway may not connect to now (its address, or its scheme)."""


@dataclass(frozen=True)
class Answer:
    """The target's answer: its status and the first bytes of its body."""

    status: int
    body: bytes


def allowed_ranges(settings: Settings) -> tuple[Network, ...]:
    """`webhook_allowed_ranges` parsed (the settings' text was checked at startup)."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False)
                 for part in settings.webhook_allowed_ranges.split(",") if part.strip())


def _in_ranges(ranges: tuple[Network, ...], ip: IPAddress) -> bool:
    return any(ip in net for net in ranges)


def _allowed(ranges: tuple[Network, ...], scheme: str, ip: IPAddress) -> bool:
    # http only inside an admin range: a public http target would send signed bodies
    # in the clear; https to public addresses, or inside an admin range.
    return _in_ranges(ranges, ip) or (scheme == "https" and is_public_address(ip))


def check_url(settings: Settings, url: str) -> str:
    """The URL, checked for a subscription; Invalid, saying what to change, otherwise."""
    if not URL_TEXT.fullmatch(url):
        raise Invalid(f"Give the target as an http(s) URL of at most {MAX_URL} printable "
                      "characters without spaces.", field="url")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    if scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise Invalid(f"'{url[:80]}' is not an http(s) URL with a host; give one such as "
                      "https://example.org/hooks/gridgate.", field="url")
    if parts.username is not None or parts.password is not None:
        raise Invalid("Put no user name or password in the target URL: the gateway signs "
                      "every delivery with the subscription's secret instead.", field="url")
    try:
        resolve_checked(parts.hostname, port or _default_port(scheme),
                        partial(_allowed, allowed_ranges(settings), scheme))
    except InputUnavailable as exc:
        plain = " (plain http is allowed only there; use https)" if scheme == "http" else ""
        raise Invalid(f"The target is refused: {exc}. Webhooks reach public addresses, "
                      f"and private ones only in ranges the admin allows "
                      f"(webhook_allowed_ranges){plain}.", field="url") from None
    return url


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def post(settings: Settings, url: str, body: bytes, headers: Mapping[str, str],
         resolve: Callable[[str, int, Callable[[IPAddress], bool]], str] = resolve_checked,
         connections: Connections | None = None) -> Answer:
    """POST `body` to `url`, connecting only to an address checked now; TargetRefused when
    the address is not allowed, OSError / HTTPException when the connection fails. With
    `connections`, a kept-alive connection to that very address is used when there is
    one, and kept for the next delivery when the target lets it."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    port = parts.port or _default_port(scheme)
    try:
        address = resolve(host, port, partial(_allowed, allowed_ranges(settings), scheme))
    except InputUnavailable as exc:
        raise TargetRefused(f"{exc}; webhooks reach only public addresses or the admin's "
                            "webhook_allowed_ranges") from None
    timeout = settings.webhook_timeout_seconds
    key = (scheme, host, port, address, timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kept = connections.take(key) if connections is not None else None
    if kept is not None:
        try:
            return _exchange(settings, kept, target, body, headers, connections, key)
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            pass  # the target closed the idle connection first: once more, on a new one
    kind = PinnedHTTPS if scheme == "https" else PinnedHTTP
    return _exchange(settings, kind(host, port, address, timeout), target, body, headers,
                     connections, key)


def _exchange(settings: Settings, conn: http.client.HTTPConnection, target: str,
              body: bytes, headers: Mapping[str, str], connections: Connections | None,
              key: Key) -> Answer:
    keep = False
    try:
        conn.request("POST", target, body=body, headers=dict(headers))
        response = conn.getresponse()
        # Bounded: a target's answer is only kept as a hint for its owner.
        answer = Answer(response.status, response.read(settings.webhook_response_max_bytes))
        # Reusable only when the answer was read whole and the target keeps it open.
        keep = connections is not None and not response.will_close and response.isclosed()
        return answer
    finally:
        if keep and connections is not None:
            connections.give(key, conn)
        else:
            conn.close()
