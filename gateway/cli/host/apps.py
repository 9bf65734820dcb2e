"""The `admin` and `db` command groups (gateway host; allocations through the API)."""

from __future__ import annotations

import typer

from gateway.cli import allocations
from gateway.cli.host import admin, server

admin_app = typer.Typer(help="Administer the gateway: accounts, site histories and bans on "
                             "the gateway host (open the database); allocations through the "
                             "API.",
                        no_args_is_help=True)
admin_user = typer.Typer(help="Local users.", no_args_is_help=True)
admin_client = typer.Typer(help="OAuth clients for automation.", no_args_is_help=True)
admin_history = typer.Typer(help="Sites' past queue waits, for routing.", no_args_is_help=True)
admin_site = typer.Typer(help="Sites as routing sees them.", no_args_is_help=True)
admin_ssh_ca = typer.Typer(help="The SSH certificate authority sites trust.",
                           no_args_is_help=True)
db_app = typer.Typer(help="The gateway's database (on the gateway host).", no_args_is_help=True)

admin_app.add_typer(allocations.allocation_app, name="allocation")
admin_user.command("add")(admin.user_add)
admin_client.command("create")(admin.client_create)
admin_app.add_typer(admin_user, name="user")
admin_app.add_typer(admin_client, name="client")
admin_history.command("import")(admin.history_import)
admin_app.add_typer(admin_history, name="history")
admin_site.command("unban")(admin.site_unban)
admin_app.add_typer(admin_site, name="site")
admin_ssh_ca.command("show")(admin.ssh_ca_show)
admin_ssh_ca.command("rotate")(admin.ssh_ca_rotate)
admin_ssh_ca.command("krl")(admin.ssh_ca_krl)
admin_app.add_typer(admin_ssh_ca, name="ssh-ca")
db_app.command("upgrade")(server.db_upgrade)
