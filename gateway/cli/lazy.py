"""Commands loaded when they are used: `gridgate list` imports the job commands (and the
client, httpx, rich) and nothing else; `gridgate --version` imports none of them.

The root group's `commands` is a `LazyCommands` mapping: every name is known up front
(help, did-you-mean), and a command's module is imported the first time the command is
looked up. Typer builds the click command from the function or sub-app as usual.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer import _click as click
from typer.main import get_command, get_group

from gateway.cli.state import accept_gateway

Loader = Callable[[], click.Command]


def command(name: str, target: str, *, gateway_option: bool = False,
            **settings: Any) -> Loader:
    """A loader of `target` ("package.module:attribute"): a command function, or a
    `typer.Typer` sub-app; `settings` are `Typer.command`'s keyword arguments.
    `gateway_option`: the command (and its subcommands) take `--gateway URL` too."""

    def load() -> click.Command:
        module, _, attribute = target.partition(":")
        obj = getattr(import_module(module), attribute)
        cmd = build(name, obj, **settings)
        if gateway_option:
            accept_gateway(cmd, name)
        return cmd

    return load


def build(name: str, obj: Any, **settings: Any) -> click.Command:
    """The click command for a command function or a sub-app, named `name`."""
    cmd: click.Command
    if isinstance(obj, typer.Typer):
        cmd = get_group(obj)  # a group even with one command, as add_typer makes it
    else:
        single = typer.Typer(add_completion=False)
        single.command(name, **settings)(obj)
        cmd = get_command(single)
    cmd.name = name
    return cmd


class LazyCommands(MutableMapping[str, click.Command]):
    """Command name -> click command, each built on first lookup (in declared order)."""

    def __init__(self, loaders: Mapping[str, Loader],
                 loaded: Mapping[str, click.Command] | None = None) -> None:
        self._loaders = dict(loaders)
        self._loaded: dict[str, click.Command] = dict(loaded or {})

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            self._loaded[name] = self._loaders[name]()
        return self._loaded[name]

    def __setitem__(self, name: str, cmd: click.Command) -> None:
        self._loaded[name] = cmd

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._loaders.pop(name, None)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._loaded.keys() - self._loaders.keys()
        yield from self._loaders

    def __len__(self) -> int:
        return len(self._loaded.keys() | self._loaders.keys())

    def __contains__(self, name: object) -> bool:
        # Without this, `in` would build the command to find out.
        return name in self._loaders or name in self._loaded
