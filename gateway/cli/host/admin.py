"""`gridgate admin ...`: accounts, site histories and bans, and the SSH certificate
authority, administered on the gateway host.

These commands open the gateway's database and data directory directly (like `serve`),
with the same GRIDGATE_* settings, so run them where the gateway runs. Each is one unit of
work over the services (gateway.auth.accounts, ...), never a statement of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli import errors, render
from gateway.cli.columns import Col, Grid

DEFAULT_CLIENT_SCOPES = ["jobs:read", "jobs:write", "sites:read"]


def _read_password(from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        password = line[:-1] if line.endswith("\n") else line
        if not password:
            raise errors.fail("error: no password on standard input.", errors.USAGE)
        return password
    first = typer.prompt("Password", hide_input=True)
    second = typer.prompt("Repeat password", hide_input=True)
    if first != second:
        raise errors.fail("error: the passwords differ.", errors.USAGE)
    return str(first)


def user_add(
    name: Annotated[str, typer.Argument(help="Username (lowercase letters, digits, _ . -).")],
    role: Annotated[list[str] | None, typer.Option(
        "--role", "-r", help="Role (repeatable): researcher, site-admin, auditor, admin.")]
    = None,
    password_stdin: Annotated[bool, typer.Option(
        "--password-stdin", help="Read the password from the first line of stdin.")] = False,
) -> None:
    """Create a local user who logs in with a password on the device-login page."""
    from gateway.auth.accounts import DEFAULT_ROLES, create_local_user
    from gateway.runtime import build_runtime
    from gateway.settings import Settings

    password = _read_password(password_stdin)
    runtime = build_runtime(Settings())
    try:
        with runtime.unit_of_work() as session:
            user = create_local_user(session, name, password, role or list(DEFAULT_ROLES))
            roles = ", ".join(user.roles)
            user_id = user.id
    finally:
        runtime.close()
    render.stderr_console().print(f"Created user {name} (id {user_id}, roles: {roles}).")


def client_create(
    name: Annotated[str, typer.Argument(help="A name for the client (e.g. the pipeline).")],
    scope: Annotated[list[str] | None, typer.Option(
        "--scope", "-s", help=f"Scope (repeatable); default: {' '.join(DEFAULT_CLIENT_SCOPES)}.")]
    = None,
    user: Annotated[str | None, typer.Option(
        help="Act as this existing local user (default: a new service user).")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print {client_id, client_secret, ...} as JSON.")] = False,
) -> None:
    """Create a client-credentials client for automation; prints its secret once."""
    from gateway.auth.accounts import create_client, user_id_named
    from gateway.runtime import build_runtime
    from gateway.settings import Settings

    settings = Settings()
    runtime = build_runtime(settings)
    try:
        with runtime.unit_of_work() as session:
            user_id = user_id_named(session, user) if user is not None else None
            client, secret = create_client(session, name, scope or DEFAULT_CLIENT_SCOPES,
                                           ["client_credentials"], user_id)
            info = {"client_id": client.client_id, "client_secret": secret, "name": name,
                    "scopes": list(client.scopes), "user_id": client.user_id,
                    "gateway": settings.public_url}
    finally:
        runtime.close()
    if json_out:
        render.print_json(info)
        return
    out = render.stdout_console()
    out.print(f"Client ID:     {info['client_id']}")
    out.print(f"Client secret: {info['client_secret']}")
    render.stderr_console().print(
        "The secret is shown only once; store it safely. Log in with:\n"
        f"  GRIDGATE_CLIENT_SECRET=... gridgate login --client-id {info['client_id']}")


def history_import(
    site: Annotated[str, typer.Argument(help="The site the records come from.")],
    file: Annotated[Path, typer.Argument(help="An SWF log (gzipped or not), or a dump.")],
    kind: Annotated[str, typer.Option(
        "--format", help="swf, sacct (sacct --parsable2 --noheader --allocations --allusers "
                         "--format=JobIDRaw,User,Partition,NCPUS,TimelimitRaw,Submit,Start,"
                         "State) or qacct (qacct -j).")] = "swf",
    timezone: Annotated[str, typer.Option(
        help="The site's time zone, for dumps with local times (IANA name).")] = "UTC",
) -> None:
    """Import a site's past queue waits, so routing predicts its waits from the start."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from gateway.runtime import build_runtime
    from gateway.services.routing.history_import import import_history
    from gateway.settings import Settings

    try:
        tz = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise errors.fail(f"error: unknown time zone {timezone!r} (an IANA name, e.g. "
                          "Europe/Stockholm).", errors.USAGE) from None
    runtime = build_runtime(Settings())
    try:
        with runtime.unit_of_work() as session:
            found = import_history(session, runtime.sites, site, file, kind, tz)
    finally:
        runtime.close()
    render.stderr_console().print(
        f"Imported {len(found.waits)} waits for site {site} "
        f"({found.skipped} records without a wait skipped).")


def site_unban(
    name: Annotated[str, typer.Argument(help="The site whose black-hole ban to lift.")],
) -> None:
    """Lift a site's black-hole ban now (recorded in the audit log): routing sends it
    `auto` jobs again, and only failures from now on can ban it again."""
    import getpass
    import socket

    from gateway.runtime import build_runtime
    from gateway.services.routing.site_bans import unban
    from gateway.settings import Settings

    runtime = build_runtime(Settings())
    actor = f"{getpass.getuser()}@{socket.gethostname()} (gridgate admin site unban)"
    try:
        with runtime.unit_of_work() as session:
            ban = unban(session, runtime.sites, name, actor, runtime.clock())
    finally:
        runtime.close()
    render.stderr_console().print(f"Lifted the ban on site {name} ({ban.reason}).",
                                  soft_wrap=True)


SSH_CA_COLUMNS = (Col("GENERATION", justify="right"), Col("STATE"), Col("FINGERPRINT"),
           Col("SIGNS FROM", drop=2), Col("LISTED UNTIL", drop=1))


def ssh_ca_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The CA keys sites should trust now (made on first use): a table, then the lines for
    each site's TrustedUserCAKeys file (during a rotation, both keys)."""
    from datetime import UTC, datetime

    from gateway.auth.ssh_ca import SshCa
    from gateway.settings import Settings

    keys = SshCa(Settings().ssh_ca_dir).trusted(datetime.now(UTC))
    if as_json:
        render.print_json([{"generation": k.generation, "state": k.state,
                            "fingerprint": k.fingerprint, "public_key": k.line,
                            "signs_from": k.signs_from, "listed_until": k.listed_until}
                           for k in keys])
        return
    table = Grid(SSH_CA_COLUMNS)
    for k in keys:
        table.add_row(str(k.generation), k.state, k.fingerprint, render.when(k.signs_from),
                      render.when(k.listed_until) if k.listed_until else "-")
    out = render.stdout_console()
    out.print(table)
    out.print("\nTrustedUserCAKeys lines:")
    for k in keys:
        out.print(k.line, soft_wrap=True)


def ssh_ca_rotate(
    overlap_days: Annotated[float, typer.Option(
        "--overlap-days", min=0,
        help="How long sites have to add the new key before it signs.")] = 7.0,
) -> None:
    """Start a rotation: a new CA key, listed for sites now, signing after the overlap;
    the old one stays listed until what it signed has expired."""
    from datetime import UTC, datetime, timedelta

    from gateway.auth.ssh_ca import SshCa
    from gateway.settings import Settings

    try:
        key = SshCa(Settings().ssh_ca_dir).rotate(datetime.now(UTC),
                                                  timedelta(days=overlap_days))
    except ValueError as exc:
        raise errors.fail(f"error: {exc}.", errors.USAGE) from None
    render.stderr_console().print(
        f"Added CA key {key.generation}; it signs from {render.when(key.signs_from)}. "
        "Add it to every certificate site's TrustedUserCAKeys before then "
        "(gridgate admin ssh-ca show).")


def ssh_ca_krl(
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="Where to write the list (for a site's RevokedKeys).")],
) -> None:
    """Write the key revocation list of the CA: every disabled user's certificates, from
    every key sites trust. A certificate lives minutes; sites that want a disabled user
    refused sooner load this with `RevokedKeys` (refresh it when users change)."""
    from datetime import UTC, datetime

    from gateway.auth.ssh_ca import SshCa
    from gateway.runtime import build_runtime
    from gateway.services.sites.certificates import revoked_key_ids
    from gateway.settings import Settings

    settings = Settings()
    runtime = build_runtime(settings)
    try:
        with runtime.sessions() as session:
            revoked = revoked_key_ids(session)
    finally:
        runtime.close()
    output.write_bytes(SshCa(settings.ssh_ca_dir).revocation_list(datetime.now(UTC), revoked))
    render.stderr_console().print(f"Wrote {output}: {len(revoked)} user(s) revoked.")
