"""`gridgate testbed up|down|status`: the three-site test cluster on this machine (root only).

Sites `roadrunner` (Slurm + slurmdbd), `galaxy` (Grid Engine, PE `mpi`) and `parnass2`
(a second Slurm) each run in a network namespace on a bridge, with their own hostname,
address, sshd and ed25519 host key. `up` writes everything needed to reach them to
the state dir `/run/gridgate-testbed/<prefix>` (see `testbed.files`).

Exit codes: 0 success (`status`: every site healthy), 1 failure or not healthy,
2 usage.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gateway.cli import errors, render
from testbed.config import (
    PREFIX_ENV,
    SUBNET_ENV,
    TEMPLATES_ENV,
    TestbedConfig,
    TestbedError,
)

if TYPE_CHECKING:
    from testbed.manager import TestbedStatus

testbed_app = typer.Typer(
    help="The local multi-site testbed: Slurm, Grid Engine and Slurm sites in network "
         "namespaces (root only).",
    no_args_is_help=True)

PrefixOpt = Annotated[str | None, typer.Option(
    "--prefix", envvar=PREFIX_ENV, show_envvar=True, metavar="NAME",
    help="Names the namespaces (<prefix>-<site>), the bridge (<prefix>-br) and the state "
         "dir; 1-8 lowercase letters/digits. Default: gwtb.")]
SubnetOpt = Annotated[str | None, typer.Option(
    "--subnet", envvar=SUBNET_ENV, show_envvar=True, metavar="CIDR",
    help="Private IPv4 subnet for the bridge (.1) and the sites (.10, .11, .12). "
         "Default: 10.123.0.0/24.")]
TemplatesOpt = Annotated[Path | None, typer.Option(
    "--site-configs", envvar=TEMPLATES_ENV, show_envvar=True, metavar="DIR",
    help="Directory of the sites' templates (roadrunner.yaml, galaxy.yaml, parnass2.yaml). "
         "Default: the repository's site-configs/.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _config(prefix: str | None, subnet: str | None) -> TestbedConfig:
    try:
        return TestbedConfig.from_env(prefix, subnet)
    except TestbedError as exc:
        raise errors.fail(f"error: {exc}", errors.USAGE) from None


def _progress(message: str) -> None:
    render.stderr_console().print(f"testbed: {message}")


def up_command(
    prefix: PrefixOpt = None,
    subnet: SubnetOpt = None,
    site_configs: TemplatesOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Bring the three sites up (idempotent: healthy sites are left as they are)."""
    from testbed.manager import up
    from testbed.sites import load_sites

    config = _config(prefix, subnet)
    started = time.monotonic()
    try:
        info = up(config, load_sites(site_configs), progress=_progress)
    except TestbedError as exc:
        raise errors.fail(f"error: {exc}") from None
    if json_out:
        render.print_json(asdict(info))
        return
    lines = [f"testbed {info.prefix} up in {time.monotonic() - started:.1f}s "
             f"(subnet {info.subnet}, bridge {info.bridge})"]
    for site in info.sites.values():
        lines += [f"{site.name:<11} {site.kind:<6} ssh {site.ip}:{site.ssh_port}  "
                  f"accounts {', '.join(site.accounts)}",
                  f"{'':<11} host key {site.host_key_fingerprint}"]
    lines += [f"state dir     {info.state_dir}", f"known_hosts   {info.known_hosts}",
              f"site configs  {info.site_configs}  (for GRIDGATE_SITE_CONFIGS_DIR)"]
    sys.stdout.write("\n".join(lines) + "\n")


def down_command(prefix: PrefixOpt = None, subnet: SubnetOpt = None) -> None:
    """Stop every site and remove its namespace, links, mounts and state dir."""
    from testbed.manager import down

    config = _config(prefix, subnet)
    try:
        report = down(config)
    except TestbedError as exc:
        raise errors.fail(f"error: {exc}") from None
    removed = (len(report.holders_killed) + len(report.netns_deleted)
               + len(report.links_deleted) + int(report.state_dir_removed))
    if not removed:
        render.stderr_console().print(f"testbed {config.prefix}: nothing to remove")
        return
    render.stderr_console().print(
        f"testbed {config.prefix}: down (killed {len(report.holders_killed)} site(s), "
        f"deleted {len(report.netns_deleted)} namespace(s) and "
        f"{len(report.links_deleted)} link(s))")


def _status_lines(st: TestbedStatus) -> list[str]:
    lines = [f"testbed {st.prefix}: subnet {st.subnet}, bridge {st.bridge} "
             f"{'up' if st.bridge_exists else 'absent'}, state dir {st.state_dir}"]
    for s in st.sites:
        health = "healthy" if s.healthy else ("down" if s.holder_pid is None else "UNHEALTHY")
        netns = s.netns if s.netns_exists else f"{s.netns} (absent)"
        lines.append(f"{s.name:<11} {health:<9} netns {netns}  {s.ip}:{s.ssh_port}  "
                     f"holder {s.holder_pid or '-'}")
        if s.holder_pid is not None:
            daemons = " ".join(n if ok else f"{n}(DOWN)" for n, ok in s.daemons.items())
            sshd = "" if s.ssh_open else "  (ssh port closed)"
            lines.append(f"{'':<11} daemons {daemons}{sshd}")
        if s.host_key_fingerprint:
            lines.append(f"{'':<11} host key {s.host_key_fingerprint}")
    return lines


def status_command(
    prefix: PrefixOpt = None,
    subnet: SubnetOpt = None,
    site_configs: TemplatesOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show each site: namespace, address, holder pid, daemons, host key fingerprint.

    Exit 0 when every site is healthy, 1 otherwise.
    """
    from testbed.manager import status
    from testbed.sites import load_sites

    config = _config(prefix, subnet)
    try:
        st = status(config, load_sites(site_configs))
    except TestbedError as exc:
        raise errors.fail(f"error: {exc}") from None
    if json_out:
        sys.stdout.write(json.dumps(st.to_json(), indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(_status_lines(st)) + "\n")
    if not st.healthy:
        raise typer.Exit(errors.FAILURE)


testbed_app.command("up")(up_command)
testbed_app.command("down")(down_command)
testbed_app.command("status")(status_command)
