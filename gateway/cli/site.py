"""`gridgate site ...`: site configurations, checked offline before the gateway loads them.

`validate` reads files only: no network, no gateway, no database.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli import errors, render
from gateway.siteconfig import (
    SiteConfig,
    SiteConfigError,
    load_site_config,
    render_json_schema,
)

site_app = typer.Typer(help="Site configurations (site-configs/<name>.yaml).",
                       no_args_is_help=True)


def _summary(config: SiteConfig) -> str:
    parts = [config.scheduler.kind.value,
             f"{len(config.partitions)} partition{'s' if len(config.partitions) != 1 else ''}"
             f" (default {config.default_partition.name})"]
    if config.accounts is not None:
        parts.append(f"{config.accounts.mode.value} accounts")
    if config.mpi_flavors:
        parts.append("MPI " + ", ".join(sorted({f.name for f in config.mpi_flavors})))
    parts.append(config.state.value)
    line = f"site {config.name!r}: " + ", ".join(parts)
    if config.descriptive:
        line += "; descriptive: the gateway never connects to it"
    elif not config.is_complete:
        line += (f"; template: `gridgate {config.provisioned_by} up` fills in its host keys "
                 "and writes the completed copy to its state directory")
    return line


def validate(
    files: Annotated[list[Path], typer.Argument(
        metavar="FILE...", help="Site config YAML files.", show_default=False)],
) -> None:
    """Check site config files against the schema (offline: no SSH, no gateway).

    Exit 0 when every file is valid, 1 when any is not (each problem is printed with the
    field to fix).
    """
    out, err = render.stdout_console(), render.stderr_console()
    failed = 0
    for path in files:
        try:
            config = load_site_config(path)
        except SiteConfigError as exc:
            failed += 1
            err.print(exc.render())
            continue
        out.print(f"{path}: valid {_summary(config)}", soft_wrap=True)
    if failed:
        raise typer.Exit(errors.FAILURE)


def schema() -> None:
    """Print the JSON Schema of a site config (as in site-configs/schema.json)."""
    sys.stdout.write(render_json_schema())


site_app.command("validate")(validate)
site_app.command("schema")(schema)
