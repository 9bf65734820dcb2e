"""The gateway's URL as the client handles it, and the hints that name it."""

from __future__ import annotations

DEFAULT_GATEWAY_URL = "http://127.0.0.1:8642"


def normalize_url(url: str) -> str:
    """One spelling per gateway: no trailing slash."""
    return url.rstrip("/")


def gateway_flag(gateway: str) -> str:
    """`--gateway URL ` for a command that must reach `gateway`; empty for the default."""
    url = normalize_url(gateway)
    return "" if url == DEFAULT_GATEWAY_URL else f"--gateway {url} "


def login_command(gateway: str) -> str:
    """The command that logs in to `gateway`, for hints: they must name the right server."""
    flag = gateway_flag(gateway)
    return f"gridgate login {flag}".rstrip()


def name_gateway(text: str, gateway: str) -> str:
    """`text` (e.g. a server's hint "run 'gridgate login'") with the login command for
    `gateway` in place of the bare one."""
    command = login_command(gateway)
    if command in text:
        return text
    return text.replace("'gridgate login'", f"'{command}'")
