"""The `gridgate` command: a client of the REST API, plus the gateway's own server commands.

Each command's module is imported when the command runs (gateway.cli.lazy), so
`gridgate --version` loads no client and `gridgate list` only the job commands'.
Exit codes are listed in `gateway.cli.errors`.
"""

from __future__ import annotations

import gc
import sys
from typing import Annotated, Any

import typer
from typer._click import Command

from gateway import __version__
from gateway.cli import lazy
from gateway.cli.errors import GatewayGroup
from gateway.cli.state import GATEWAY_HELP, HOST_COMMANDS, URL_ENV, state

HELP = """Submit and follow HPC jobs through a gridgate gateway.

\b
  gridgate login                   log in (open the URL, enter the code)
  gridgate whoami                  your account, projects and token
  gridgate estimate job.yaml       where it would start and finish soonest
  gridgate submit job.yaml --wait  submit a job and wait for it
  gridgate explain JOB             why it runs where it does
  gridgate list                    your jobs, newest first
  gridgate logs JOB -f             follow a job's output
  gridgate watch JOB...            each state change as it happens
  gridgate outputs JOB             the files a job left (its outputs)
  gridgate fetch JOB -o results/   download a job's outputs, verified
  gridgate workflow submit wf.yaml a DAG of jobs; `workflow graph ID` draws it

\b
Exit codes: 0 ok, 1 failure, 2 usage, 3 gateway unreachable,
4 not logged in or session expired, 5 request refused, 6 not found,
130 interrupted (Ctrl-C: the job keeps running); `wait` mirrors the job
(its exit code, 125 cancelled, 124 timeout).
"""

# Command name -> "module:attribute" (a command function or a typer.Typer sub-app).
COMMANDS = {
    "serve": "gateway.cli.host.server:serve",
    "worker": "gateway.cli.host.server:worker",
    "login": "gateway.cli.auth:login",
    "logout": "gateway.cli.auth:logout",
    "whoami": "gateway.cli.auth:whoami",
    "submit": "gateway.cli.jobs.commands:submit",
    "list": "gateway.cli.jobs.commands:list_jobs",
    "show": "gateway.cli.jobs.commands:show",
    "events": "gateway.cli.jobs.commands:events",
    "logs": "gateway.cli.jobs.commands:logs",
    "cancel": "gateway.cli.jobs.control:cancel",
    "hold": "gateway.cli.jobs.control:hold",
    "release": "gateway.cli.jobs.control:release",
    "wait": "gateway.cli.jobs.commands:wait",
    "watch": "gateway.cli.jobs.watch:watch",
    "outputs": "gateway.cli.files.outputs:list_outputs",
    "fetch": "gateway.cli.files.outputs:fetch",
    "outputs-delete": "gateway.cli.files.outputs:delete_outputs",
    "upload": "gateway.cli.files.uploads:upload",
    "uploads": "gateway.cli.files.uploads:list_uploads",
    "upload-delete": "gateway.cli.files.uploads:delete",
    "estimate": "gateway.cli.routing:estimate",
    "explain": "gateway.cli.routing:explain",
    "sites": "gateway.cli.system:sites",
    "health": "gateway.cli.system:health",
    "schema": "gateway.cli.system:schema",
    "simulate": "gateway.cli.simulate:simulate",
    "projects": "gateway.cli.allocations:projects",
    "balance": "gateway.cli.allocations:balance",
    "usage": "gateway.cli.reports:usage",
    "project": "gateway.cli.allocations:project_app",
    "admin": "gateway.cli.host.apps:admin_app",
    "db": "gateway.cli.host.apps:db_app",
    "site": "gateway.cli.host.site:site_app",
    "report": "gateway.cli.reports:report_app",
    "audit": "gateway.cli.audit:audit_app",
    "image": "gateway.cli.images.commands:image_app",
    "workflow": "gateway.cli.workflows.commands:workflow_app",
    "webhook": "gateway.cli.webhooks:webhook_app",
}

TESTBED_MISSING = (
    "gridgate testbed: the testbed tooling is not installed (it is a developer tool, not "
    "part of the gridgate package). From a clone of gridgate: pip install -e ./testbed")


def testbed_missing(ctx: typer.Context) -> None:
    """Say what to install: the testbed is a distribution of its own (testbed/pyproject.toml)."""
    from gateway.cli import errors

    raise errors.fail(TESTBED_MISSING)


def _testbed() -> Command:
    try:
        from gateway.cli.host.testbed import testbed_app
    except ModuleNotFoundError as exc:
        if exc.name != "testbed":
            raise
        return lazy.build(
            "testbed", testbed_missing, add_help_option=False,
            help="The local multi-site testbed (not installed: pip install -e ./testbed).",
            context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    return lazy.build("testbed", testbed_app)


class RootGroup(GatewayGroup):
    """`gridgate`: its commands load on first use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        loaders = {name: lazy.command(name, target,
                                      gateway_option=name not in HOST_COMMANDS)
                   for name, target in COMMANDS.items()}
        loaders["testbed"] = _testbed
        eager = kwargs.pop("commands", None) or {}
        commands: Any = lazy.LazyCommands(loaders, eager)  # a mapping is all click needs
        super().__init__(*args, commands=commands, **kwargs)


app = typer.Typer(
    cls=RootGroup,
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    # Locals can hold tokens and secrets: never print them in a traceback.
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


def main() -> None:
    """Console-script entry point."""
    # httpx's package imports its own command line (`httpx._main`: click, rich.progress,
    # rich.syntax, pygments) whenever those are installed, which they are beside gridgate:
    # 8% of `gridgate list`'s start-up. The CLI never runs httpx's; a None entry makes
    # that import fail, and httpx falls back to a stub as it does when they are missing.
    modules: dict[str, Any] = sys.modules  # typeshed's has no room for the None entry
    modules.setdefault("httpx._main", None)
    try:
        app(prog_name="gridgate")
    finally:
        # Everything a command built lives until exit: spare the collector its walk over
        # them during interpreter shutdown (a third of `gridgate list`'s time otherwise).
        gc.freeze()


if __name__ == "__main__":
    main()
