"""The `gridgate` command: a client of the REST API, plus the gateway's own server commands.

Exit codes are listed in `gateway.cli.errors`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gateway import __version__
from gateway.cli import (
    admin,
    allocations,
    auth,
    errors,
    fetch,
    jobs,
    render,
    reports,
    routing,
    server,
    simulate,
    site,
    uploads,
)
from gateway.cli.audit import audit_app
from gateway.cli.errors import GatewayGroup
from gateway.cli.state import GATEWAY_HELP, URL_ENV, state

HELP = """Submit and follow HPC jobs through a gridgate gateway.

\b
  gridgate login                   log in (open the URL, enter the code)
  gridgate whoami                  your account, projects and token
  gridgate estimate job.yaml       where it would start and finish soonest
  gridgate submit job.yaml --wait  submit a job and wait for it
  gridgate explain JOB             why it runs where it does
  gridgate list                    your jobs, newest first
  gridgate logs JOB -f             follow a job's output
  gridgate fetch JOB -o results/   download a job's outputs, verified

\b
Exit codes: 0 ok, 1 failure, 2 usage, 3 gateway unreachable,
4 not logged in or session expired, 5 request refused, 6 not found,
130 interrupted (Ctrl-C: the job keeps running); `wait` mirrors the job
(its exit code, 125 cancelled, 124 timeout).
"""

app = typer.Typer(
    cls=GatewayGroup,
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    # Locals can hold tokens and secrets: never print them in a traceback.
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
admin_app = typer.Typer(help="Administer the gateway: accounts and site histories on the gateway "
                             "host (open the database); allocations through the API.",
                        no_args_is_help=True)
admin_user = typer.Typer(help="Local users.", no_args_is_help=True)
admin_client = typer.Typer(help="OAuth clients for automation.", no_args_is_help=True)
admin_history = typer.Typer(help="Sites' past queue waits, for routing.", no_args_is_help=True)
db_app = typer.Typer(help="The gateway's database (on the gateway host).", no_args_is_help=True)


def _version(value: bool) -> None:
    if value:
        print(f"gridgate {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    gateway: Annotated[str | None, typer.Option(
        "--gateway", envvar=URL_ENV, metavar="URL", show_default=False,
        help=GATEWAY_HELP + " Accepted after any command's name too.")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Show the version.")] = False,
) -> None:
    state(ctx).given = gateway


def sites(ctx: typer.Context, json_out: jobs.JsonOpt = False) -> None:
    """List the sites jobs can run at: their status and live load (queued and running
    jobs, free cores, and the predicted wait of a 1-node, 1-hour job, median and 95%
    bound, at the last queue snapshot a routing pass took)."""
    with state(ctx).client() as client:
        items = client.sites()
    if json_out:
        render.print_json({"items": items})
        return
    console = render.stdout_console()
    console.print(render.sites_table(items))
    console.print()
    console.print(render.load_table(items))


def health(ctx: typer.Context, json_out: jobs.JsonOpt = False) -> None:
    """Check that the gateway is up and reaches its database (no login needed)."""
    with state(ctx).client(authenticated=False) as client:
        info = client.health()
    if json_out:
        render.print_json(info)
        return
    render.stdout_console().print(
        f"{state(ctx).gateway}: {info.get('status')} (database {info.get('database')}, "
        f"version {info.get('version')})")


def schema(ctx: typer.Context) -> None:
    """Print the JSON Schema of a job spec."""
    with state(ctx).client(authenticated=False) as client:
        render.print_json(client.job_spec_schema())


app.command("serve")(server.serve)
app.command("worker")(server.worker)
app.command("login")(auth.login)
app.command("logout")(auth.logout)
app.command("whoami")(auth.whoami)
app.command("submit")(jobs.submit)
app.command("list")(jobs.list_jobs)
app.command("show")(jobs.show)
app.command("events")(jobs.events)
app.command("logs")(jobs.logs)
app.command("cancel")(jobs.cancel)
app.command("wait")(jobs.wait)
app.command("fetch")(fetch.fetch)
app.command("outputs-delete")(fetch.delete_outputs)
app.command("upload")(uploads.upload)
app.command("uploads")(uploads.list_uploads)
app.command("upload-delete")(uploads.delete)
app.command("estimate")(routing.estimate)
app.command("explain")(routing.explain)
app.command("sites")(sites)
app.command("health")(health)
app.command("schema")(schema)
app.command("simulate")(simulate.simulate)
app.command("projects")(allocations.projects)
app.command("balance")(allocations.balance)
app.add_typer(allocations.project_app, name="project")
admin_app.add_typer(allocations.allocation_app, name="allocation")
admin_user.command("add")(admin.user_add)
admin_client.command("create")(admin.client_create)
admin_app.add_typer(admin_user, name="user")
admin_app.add_typer(admin_client, name="client")
admin_history.command("import")(admin.history_import)
admin_app.add_typer(admin_history, name="history")
db_app.command("upgrade")(server.db_upgrade)
app.add_typer(admin_app, name="admin")
app.add_typer(db_app, name="db")
app.add_typer(site.site_app, name="site")
app.add_typer(reports.report_app, name="report")
app.command("usage")(reports.usage)
app.add_typer(audit_app, name="audit")


TESTBED_MISSING = (
    "gridgate testbed: the testbed tooling is not installed (it is a developer tool, not "
    "part of the gridgate package). From a clone of gridgate: pip install -e ./testbed")


def testbed_missing(ctx: typer.Context) -> None:
    """Say what to install: the testbed is a distribution of its own (testbed/pyproject.toml)."""
    raise errors.fail(TESTBED_MISSING)


def _add_testbed(parent: typer.Typer) -> None:
    # Imported at start-up only as far as the option declarations need (testbed.config);
    # the commands import the rest when they run.
    try:
        from gateway.cli.testbed import testbed_app
    except ModuleNotFoundError as exc:
        if exc.name != "testbed":
            raise
        parent.command(
            "testbed", add_help_option=False,
            help="The local multi-site testbed (not installed: pip install -e ./testbed).",
            context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
        )(testbed_missing)
        return
    parent.add_typer(testbed_app, name="testbed")


_add_testbed(app)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="gridgate")


if __name__ == "__main__":
    main()
