"""Projects, balances and the committee's allocation commands, all through the REST API:

    gridgate projects                          the projects you may read
    gridgate project show|create|add-member|remove-member
    gridgate balance [--project P]             awarded, used, held, available per allocation
    gridgate admin allocation grant|adjust|transfer|list|suspend|resume

Unlike `gridgate admin user` (which opens the database on the gateway host), the
allocation commands are requests an administrator's token makes, from anywhere.
Amounts are SU, given and shown with up to three decimals.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

import typer
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.schemas.projects import AllocationOut, MemberOut, ProjectOut, ProjectSummaryOut

project_app = typer.Typer(help="A project: its members and allocations.", no_args_is_help=True)
allocation_app = typer.Typer(
    help="Grant and manage allocations (an administrator's token; through the API).",
    no_args_is_help=True)

ProjectArg = Annotated[str, typer.Argument(help="The project's name.", show_default=False)]
IdArg = Annotated[int, typer.Argument(help="The allocation's id (see 'list').",
                                      show_default=False)]
AmountArg = Annotated[str, typer.Argument(help="Service units, e.g. 1000 or 12.5.",
                                          show_default=False)]
ReasonOpt = Annotated[str, typer.Option(
    "--reason", "-r", help="Why, for the committee's record (required).", show_default=False)]
STATUS_STYLES = {"active": "green", "pending": "cyan", "suspended": "yellow", "expired": "dim"}
STANDINGS = {"pi": "PI", "member": "member", "auditor": "auditor", "admin": "admin"}


def _su(value: Decimal) -> Text:
    return Text(f"{value:,.3f}", justify="right")


def _moment(text: str) -> datetime:
    """A date (its start) or an ISO 8601 time; without a zone, UTC."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a date (2027-01-01) or an ISO 8601 time "
                                 "(2027-01-01T12:00:00Z).") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def allocations_table(items: Sequence[AllocationOut], *, with_project: bool = True) -> Grid:
    """One row per allocation: where it may be spent, until when, and its sums (a
    pending one starts later: `--json` has its start). Narrow terminals leave out HELD,
    then USED and AWARDED (AVAILABLE stays)."""
    names = [Col("PROJECT")] if with_project else []
    table = Grid([Col("ID"), *names, Col("POOL"), Col("STATUS"), Col("ENDS"),
                  Col("AWARDED", drop=1, justify="right"), Col("USED", drop=2, justify="right"),
                  Col("HELD", drop=3, justify="right"), Col("AVAILABLE", justify="right")])
    for a in items:
        table.add_row(Text(str(a["id"])), *([Text(a["project"])] if with_project else []),
                      Text(a["pool"]), Text(a["status"], style=STATUS_STYLES.get(a["status"], "")),
                      Text(_day(a["ends_at"])), _su(a["awarded"]), _su(a["used"]),
                      _su(a["held"]), _su(a["available"]))
    return table


def projects_table(items: Sequence[ProjectSummaryOut]) -> Grid:
    table = Grid([Col("NAME"), Col("STANDING"), Col("MEMBERS", drop=1, justify="right"),
                  Col("AVAILABLE SU", justify="right"),
                  Col("DESCRIPTION", text=True, wrap=True)])
    for p in items:
        table.add_row(Text(p["name"]), Text(STANDINGS.get(p["standing"], p["standing"])),
                      Text(str(p["members"]), justify="right"), _su(p["available"]),
                      Text(p["description"] or "-"))
    return table


def members_table(members: Sequence[MemberOut]) -> Grid:
    table = Grid([Col("USER"), Col("ROLE")], title="Members")
    for m in members:
        table.add_row(Text(m["user"]), Text(STANDINGS.get(m["role"], m["role"])))
    return table


def _print_project(project: ProjectOut) -> None:
    console = render.stdout_console()
    console.print(Text(f"{project['name']}: {project['description'] or '(no description)'}"),
                  soft_wrap=True)
    console.print(Text(f"Your standing: {STANDINGS.get(project['standing'], '-')}"))
    console.print()
    console.print(members_table(project["members"]))
    console.print()
    if project["allocations"]:
        console.print(allocations_table(project["allocations"], with_project=False))
    else:
        console.print("No allocations.")


def projects(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """List the projects you may read: your standing, members, SU available now."""
    with state(ctx).client() as client:
        items = client.projects()
    if json_out:
        render.print_json({"items": items})
        return
    render.stdout_console().print(projects_table(items))


def balance(ctx: typer.Context, project: Annotated[str | None, typer.Option(
        "--project", "-p", help="One project (default: every project you may read).")] = None,
            json_out: JsonOpt = False) -> None:
    """Awarded, used, held and available SU per allocation."""
    with state(ctx).client() as client:
        if project is not None:
            document = client.balance(project)
            if json_out:
                render.print_json(document)
                return
            items = document["allocations"]
            footer = f"Project {project} may spend {document['available']:,.3f} SU now."
        else:
            items = client.allocations()
            if json_out:
                render.print_json({"items": items})
                return
            footer = ""
    console = render.stdout_console()
    if not items:
        console.print("No allocations.")
        return
    console.print(allocations_table(items, with_project=project is None))
    if footer:
        console.print(Text(footer), soft_wrap=True)


@project_app.command("show")
def show(ctx: typer.Context, name: ProjectArg, json_out: JsonOpt = False) -> None:
    """The project's members and allocations."""
    with state(ctx).client() as client:
        project = client.project(name)
    if json_out:
        render.print_json(project)
        return
    _print_project(project)


@project_app.command("create")
def create(ctx: typer.Context, name: ProjectArg, description: Annotated[str | None, typer.Option(
        "--description", "-d", help="What the project is.")] = None,
           json_out: JsonOpt = False) -> None:
    """Create a project (administrators); then name its PI with add-member --pi."""
    with state(ctx).client() as client:
        project = client.create_project(name, description)
    if json_out:
        render.print_json(project)
        return
    render.stderr_console().print(f"Created project {project['name']}.")


@project_app.command("add-member")
def add_member(ctx: typer.Context, name: ProjectArg,
               user: Annotated[str, typer.Argument(help="Their gateway username.")],
               pi: Annotated[bool, typer.Option("--pi", help="Make them a PI.")] = False) -> None:
    """Add a member to the project, or change their role (its PI or an administrator)."""
    with state(ctx).client() as client:
        member = client.add_member(name, user, pi=pi)
    role = STANDINGS.get(member["role"], member["role"])
    render.stderr_console().print(f"{member['user']} is a {role} of project {name}.")


@project_app.command("remove-member")
def remove_member(ctx: typer.Context, name: ProjectArg,
                  user: Annotated[str, typer.Argument(help="Their gateway username.")]) -> None:
    """Take a member out of the project (their past jobs stay charged to it)."""
    with state(ctx).client() as client:
        client.remove_member(name, user)
    render.stderr_console().print(f"{user} is no longer a member of project {name}.")


def _show(allocations: Sequence[AllocationOut], json_out: bool, message: str) -> None:
    if json_out:
        render.print_json(allocations[0] if len(allocations) == 1 else
                          {"source": allocations[0], "target": allocations[1]})
        return
    render.stderr_console().print(message)
    render.stdout_console().print(allocations_table(allocations))


@allocation_app.command("grant")
def grant(ctx: typer.Context, project: ProjectArg, amount: AmountArg, reason: ReasonOpt,
          ends: Annotated[str, typer.Option(
              "--ends", help="When it ends: a date (2027-01-01) or an ISO 8601 time.",
              show_default=False)],
          pool: Annotated[str, typer.Option(
              "--pool", help="A site's name, or '*' for any site of the federation.")] = "*",
          starts: Annotated[str | None, typer.Option(
              "--starts", help="When it starts (default: now).")] = None,
          credit_limit: Annotated[str | None, typer.Option(
              "--credit-limit", help="SU it may go below zero (default 0).")] = None,
          json_out: JsonOpt = False) -> None:
    """Grant a project AMOUNT service units."""
    with state(ctx).client() as client:
        allocation = client.grant(project, pool, amount, _moment(ends), reason,
                                  starts_at=_moment(starts) if starts else None,
                                  credit_limit=credit_limit)
    _show([allocation], json_out, f"Granted allocation {allocation['id']} to project "
          f"{project}: {allocation['awarded']:,.3f} SU at pool {allocation['pool']}.")


@allocation_app.command("adjust", context_settings={"ignore_unknown_options": True})
def adjust(ctx: typer.Context, allocation_id: IdArg, amount: Annotated[str, typer.Argument(
        help="SU to add; negative (e.g. -250) takes SU back.", show_default=False)],
           reason: ReasonOpt, json_out: JsonOpt = False) -> None:
    """Add SU to an allocation, or take SU back."""
    with state(ctx).client() as client:
        allocation = client.adjust(allocation_id, amount, reason)
    _show([allocation], json_out, f"Adjusted allocation {allocation_id} by {amount} SU.")


@allocation_app.command("transfer")
def transfer(ctx: typer.Context,
             source: Annotated[int, typer.Argument(help="From this allocation.")],
             target: Annotated[int, typer.Argument(help="To this allocation.")],
             amount: AmountArg, reason: ReasonOpt, json_out: JsonOpt = False) -> None:
    """Move SU from one allocation to another."""
    with state(ctx).client() as client:
        moved = client.transfer(source, target, amount, reason)
    _show([moved["source"], moved["target"]], json_out,
          f"Moved {amount} SU from allocation {source} to allocation {target}.")


@allocation_app.command("list")
def list_allocations(ctx: typer.Context, project: Annotated[str | None, typer.Option(
        "--project", "-p", help="One project (default: all).")] = None,
                     json_out: JsonOpt = False) -> None:
    """Every allocation (of one project), with its sums."""
    with state(ctx).client() as client:
        items = client.allocations(project)
    if json_out:
        render.print_json({"items": items})
        return
    render.stdout_console().print(allocations_table(items))


@allocation_app.command("suspend")
def suspend(ctx: typer.Context, allocation_id: IdArg, reason: ReasonOpt,
            json_out: JsonOpt = False) -> None:
    """No new job may draw on the allocation (jobs holding liens on it settle)."""
    with state(ctx).client() as client:
        allocation = client.set_allocation_status(allocation_id, "suspend", reason)
    _show([allocation], json_out, f"Suspended allocation {allocation_id}.")


@allocation_app.command("resume")
def resume(ctx: typer.Context, allocation_id: IdArg, reason: ReasonOpt,
           json_out: JsonOpt = False) -> None:
    """Make a suspended allocation active again."""
    with state(ctx).client() as client:
        allocation = client.set_allocation_status(allocation_id, "resume", reason)
    _show([allocation], json_out, f"Resumed allocation {allocation_id}.")
