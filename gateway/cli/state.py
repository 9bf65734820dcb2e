"""What every command shares: the gateway URL and how to build a client for it."""

from __future__ import annotations

from dataclasses import dataclass

import typer

from gateway.client.api import DEFAULT_GATEWAY_URL, GatewayClient
from gateway.client.credentials import StoredTokenProvider, normalize_url


@dataclass(frozen=True)
class CliState:
    gateway: str

    def client(self, *, authenticated: bool = True) -> GatewayClient:
        """A client of the gateway, sending the stored login's token when `authenticated`."""
        provider = StoredTokenProvider(self.gateway) if authenticated else None
        return GatewayClient(self.gateway, provider)


def state(ctx: typer.Context) -> CliState:
    """The root command's state (set by its callback)."""
    obj = ctx.find_root().obj
    if isinstance(obj, CliState):
        return obj
    return CliState(normalize_url(DEFAULT_GATEWAY_URL))
