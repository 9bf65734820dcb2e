"""What every command shares: the gateway URL and how to build a client for it.

The gateway is, first to last: `--gateway URL` (before or after the command's name),
`GRIDGATE_URL`, the gateway of the stored login (`gridgate login` remembers it), the
default `http://127.0.0.1:8642`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, cached_property
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main
from typer import _click as click
from typer.core import TyperGroup

from gateway.client.urls import DEFAULT_GATEWAY_URL, normalize_url

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient

URL_ENV = "GRIDGATE_URL"

GATEWAY_HELP = ("The gateway's base URL (default: $GRIDGATE_URL, else the one you logged "
                "in to, else http://127.0.0.1:8642).")
# Commands that run on the gateway host (its database, its files) or offline: they
# reach no gateway over HTTP, so `--gateway` would mean nothing to them.
HOST_COMMANDS = frozenset({"serve", "worker", "db", "testbed", "simulate", "site", "image",
                           "admin user", "admin client", "admin history"})


@dataclass
class CliState:
    given: str | None = None  # --gateway or GRIDGATE_URL

    @cached_property
    def gateway(self) -> str:
        """The gateway every request of this command goes to."""
        if self.given:
            return normalize_url(self.given)
        # Imported here: `gridgate --version` and `--help` load no client.
        from gateway.client.credentials import remembered_gateway

        return remembered_gateway() or DEFAULT_GATEWAY_URL

    @contextmanager
    def client(self, *, authenticated: bool = True) -> Iterator[GatewayClient]:
        """A client of the gateway, sending the stored login's token when `authenticated`;
        closed on leaving, except after Ctrl-C."""
        from gateway.cli.errors import Interrupted
        from gateway.client.api import GatewayClient
        from gateway.client.credentials import StoredTokenProvider

        # pydantic looks for plugins in every installed distribution's entry points when
        # the client validates its first response (3% of `gridgate list`); a
        # client command has no use for them. An explicit setting (even empty) is kept.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        provider = StoredTokenProvider(self.gateway) if authenticated else None
        client = GatewayClient(self.gateway, provider)
        interrupted = False
        try:
            yield client
        except (KeyboardInterrupt, Interrupted):
            # Ctrl-C can land right after httpcore's pool took its lock, before the `with`
            # that releases it began (its ThreadLock.__enter__); closing the pool would
            # then wait for that lock forever. The command ends now: the OS closes its
            # connections.
            interrupted = True
            raise
        finally:
            if not interrupted:
                client.close()

    def command(self, words: str) -> str:
        """`gridgate WORDS` as a hint to type next: with `--gateway` when the same
        command typed bare (same environment) would reach another gateway."""
        bare = CliState(os.environ.get(URL_ENV) or None).gateway
        flag = "" if bare == self.gateway else f"--gateway {self.gateway} "
        return f"gridgate {flag}{words}"


def state(ctx: typer.Context) -> CliState:
    """The root command's state (set by its callback)."""
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def _given(ctx: typer.Context, value: str | None) -> None:
    if value is not None:
        state(ctx).given = value


@cache
def _gateway_option() -> Any:
    """The `--gateway` option as typer builds it (one object, shared: options hold no
    parse state)."""
    probe = typer.Typer()

    @probe.command()
    def _probe(_gateway: Annotated[str | None, typer.Option(
            "--gateway", metavar="URL", expose_value=False, callback=_given,
            show_default=False, help=GATEWAY_HELP)] = None) -> None:
        """Never run: only its option is taken."""

    return typer.main.get_command(probe).params[0]


def accept_gateway(command: click.Command, path: str) -> None:
    """Give `command` (named `path`), or each command of a group but those that run on
    the gateway host, its own `--gateway URL` option, so `gridgate list --gateway URL`
    works as `gridgate --gateway URL list` does."""
    if path in HOST_COMMANDS:
        return
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            accept_gateway(sub, f"{path} {name}")
    elif not any("--gateway" in getattr(p, "opts", ()) for p in command.params):
        command.params.append(_gateway_option())
