"""`gridgate site ...`: site configurations, checked offline before the gateway loads them.

`validate` reads files only: no network, no gateway, no database. `check` runs on the
gateway host and checks a configured site live, with the gateway's own keys and pins.
The gateway's own modules (site configs, settings, the site check service) are imported
inside the commands: the rest of the CLI needs only the client, and starts faster.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from gateway.cli import errors, render
from gateway.domain.errors import GatewayError

if TYPE_CHECKING:
    from gateway.services.sites.check_report import SiteCheckReport
    from gateway.settings import Settings
    from gateway.siteconfig import SiteConfig

site_app = typer.Typer(help="Site configurations (site-configs/<name>.yaml).",
                       no_args_is_help=True)


def _summary(config: SiteConfig) -> str:
    parts = [config.scheduler.kind,
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
    from gateway.siteconfig import SiteConfigError, load_site_config

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
    from gateway.siteconfig import render_json_schema

    sys.stdout.write(render_json_schema())


def _site_config(settings: Settings, name: str) -> SiteConfig:
    from gateway.siteconfig import SiteConfigError, load_site_config

    directory = settings.site_configs_dir
    if directory is None:
        raise errors.fail("error: GRIDGATE_SITE_CONFIGS_DIR is not set: point it at the "
                          "gateway's directory of <site>.yaml files")
    path = next((p for p in (directory / f"{name}.yaml", directory / f"{name}.yml")
                 if p.is_file()), None)
    if path is None:
        known = sorted(p.stem for p in directory.glob("*.y*ml")) if directory.is_dir() else []
        raise errors.fail(f"error: no site {name!r} in {directory} (sites: "
                          f"{', '.join(known) or 'none'})", errors.NOT_FOUND)
    try:
        config = load_site_config(path)
    except SiteConfigError as exc:
        render.stderr_console().print(exc.render())
        raise typer.Exit(errors.FAILURE) from None
    if not config.descriptive and not config.is_complete:
        raise errors.fail(f"error: {path} is a template without host keys: check the "
                          "completed copy its provisioner wrote instead")
    return config


# By site_check.Status value.
_STYLES = {"pass": "green", "fail": "red", "skip": "yellow"}


def _report_table(report: SiteCheckReport) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("CHECK", "RESULT", "DETAIL"):
        table.add_column(column)
    for check in report.checks:
        table.add_row(Text(check.name), Text(check.status.value.upper(),
                                             style=_STYLES[check.status]),
                      Text(check.detail))
    return table


def check(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The site's name.",
                                        show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check a configured site live, from the gateway host (like `serve`).

    Reads GRIDGATE_SITE_CONFIGS_DIR and GRIDGATE_SECRETS_DIR. Logs in with the pinned host
    key (community account, or the first mapped account; on a certificate site, with a
    certificate, and checks that one for another principal is refused), asks the scheduler for its
    partitions and compares their limits with the config, looks for each MPI launcher, and
    makes sure scratch_root is writable. Exit 0 only when every check passes.
    """
    from gateway.auth.ssh_ca import SshCa
    from gateway.runtime import build_runtime
    from gateway.services.sites.certificates import CertificateSigner
    from gateway.services.sites.check import check_site
    from gateway.services.sites.check_report import Status
    from gateway.settings import Settings
    from gateway.siteconfig import AccountMode

    settings = Settings()
    config = _site_config(settings, name)
    runtime = None
    try:
        signer = None
        if config.accounts is not None and config.accounts.mode == AccountMode.CERTIFICATE:
            # Certificates are signed as for jobs: the gateway's CA, its users' states.
            runtime = build_runtime(settings)
            signer = CertificateSigner(SshCa(settings.ssh_ca_dir), runtime.sessions,
                                       runtime.clock)
        report = check_site(config, settings, signer=signer)
    except GatewayError as exc:
        raise typer.Exit(errors.report(exc)) from None
    finally:
        if runtime is not None:
            runtime.close()
    if as_json:
        render.print_json(report.as_json())
    else:
        out = render.stdout_console()
        out.print(f"site {report.site!r} as {report.account}:", soft_wrap=True)
        out.print(_report_table(report))
        # Failures again in full, one line each: a table cell wraps on a narrow terminal.
        for failure in (c for c in report.checks if c.status is Status.FAIL):
            out.print(f"FAIL {failure.name}: {failure.detail}", soft_wrap=True)
        failed = sum(c.status is not Status.OK for c in report.checks)
        out.print("all checks passed" if report.ok else
                  f"{failed} of {len(report.checks)} checks did not pass")
    if not report.ok:
        raise typer.Exit(errors.FAILURE)


site_app.command("validate")(validate)
site_app.command("check")(check)
site_app.command("schema")(schema)
