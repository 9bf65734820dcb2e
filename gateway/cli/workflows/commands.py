"""`gridgate workflow`: submit a workflow spec (YAML or JSON), list your workflows, show
one with each step, cancel one (every unfinished step), draw its DAG. Tables for people,
`--json` for scripts. Through the REST client only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from gateway.cli import errors, render
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs.spec import load_spec_file
from gateway.cli.state import state
from gateway.cli.workflows.graph import MARKS, graph
from gateway.client.errors import ClientError
from gateway.schemas.workflows import WorkflowOut

workflow_app = typer.Typer(
    help="Workflows: DAGs of jobs with data edges (docs/researchers/workflows.md).",
    no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
IdArg = Annotated[str, typer.Argument(metavar="WORKFLOW",
                                      help="A workflow id, or a unique start of one.")]
FINISHED = {"completed": 0, "failed": 1, "cancelled": 125}


def _short(text: str | None) -> str:
    return (text or "-")[:8]


def _list_table(items: list[WorkflowOut]) -> Grid:
    table = Grid([Col("ID"), Col("NAME", text=True), Col("STATE"),
                  Col("STEPS", text=True, wrap=True), Col("CREATED", drop=1)])
    for w in items:
        steps = ", ".join(f"{n} {s}" for s, n in sorted(w["step_states"].items()))
        table.add_row(_short(w["id"]), w["name"], render.state_text(w["state"].upper()),
                      steps, render.when(w["created_at"]))
    return table


def step_state(state: str) -> Text:
    """A step's state with its mark, styled as data (never read as markup)."""
    mark, style = MARKS.get(state, ("?", ""))
    return Text(f"{mark} {state}", style=style)


def _steps_table(workflow: WorkflowOut) -> Grid:
    """One line per step; narrow terminals leave out MATRIX, JOB STATE, SITE and NEEDS
    (in that order), and the reason wraps."""
    table = Grid([Col("STEP"), Col("MATRIX", drop=4), Col("STATE"), Col("JOB"),
                  Col("JOB STATE", drop=3), Col("SITE", drop=2), Col("NEEDS", drop=1),
                  Col("REASON", text=True, wrap=True)])
    for s in workflow["steps"] or []:
        table.add_row(s["instance"], s["matrix"] or "-", step_state(s["state"]),
                      _short(s["job_id"]), s["job_state"] or "-", s["site"] or "-",
                      ", ".join(s["needs"]) or "-", s["reason"] or "-")
    return table


def _header(workflow: WorkflowOut) -> str:
    extra = " (cancel requested)" if workflow["cancel_requested"] else ""
    return (f"Workflow {workflow['id']}  {workflow['name']}  "
            f"{workflow['state'].upper()}{extra}")


@workflow_app.command("submit")
def submit(
    ctx: typer.Context,
    spec_file: Annotated[Path, typer.Argument(metavar="FILE",
                                              help="The workflow spec, YAML or JSON.")],
    idempotency_key: Annotated[str | None, typer.Option(
        "--idempotency-key", help="Submitting again with the same key and file returns the "
                                  "same workflow.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help=(
        "Wait until the workflow ends; exit 0 completed, 1 failed, 125 cancelled."))] = False,
    json_out: JsonOpt = False,
) -> None:
    """Submit a workflow: every step (each combination of a matrix) becomes a job."""
    try:
        spec = load_spec_file(spec_file)
    except ClientError as exc:
        raise errors.fail(f"error: {exc.message}", errors.USAGE) from None
    with state(ctx).client() as client:
        workflow = client.submit_workflow(spec, idempotency_key=idempotency_key)
        if wait and workflow["state"] not in FINISHED:
            workflow = client.wait_workflow(workflow["id"])
    if json_out:
        render.print_json(workflow)
    else:
        console = render.stdout_console()
        console.print(_header(workflow))
        console.print(_steps_table(workflow))
    if wait:
        raise typer.Exit(FINISHED[workflow["state"]])


@workflow_app.command("list")
def list_workflows(
    ctx: typer.Context,
    state_filter: Annotated[str | None, typer.Option(
        "--state", help="Only workflows in this state (running, completed, failed, "
                        "cancelled).")] = None,
    limit: Annotated[int, typer.Option(help="Workflows per page.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="The next page's cursor.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Your workflows, newest first, with how many steps are in each state."""
    with state(ctx).client() as client:
        page = client.list_workflows(state=state_filter, limit=limit, cursor=cursor)
    if json_out:
        render.print_json(page)
        return
    if not page["items"]:
        render.stderr_console().print("No workflows.")
        return
    render.stdout_console().print(_list_table(list(page["items"])))
    if page["next_cursor"]:
        render.stderr_console().print(f"More workflows: --cursor {page['next_cursor']}")


@workflow_app.command("show")
def show(ctx: typer.Context, workflow_id: IdArg, json_out: JsonOpt = False) -> None:
    """One workflow with each step, its job and what it waits for."""
    with state(ctx).client() as client:
        workflow = client.get_workflow(client.resolve_workflow_id(workflow_id))
    if json_out:
        render.print_json(workflow)
        return
    console = render.stdout_console()
    console.print(_header(workflow))
    console.print(_steps_table(workflow))


@workflow_app.command("cancel")
def cancel(ctx: typer.Context, workflow_id: IdArg, json_out: JsonOpt = False) -> None:
    """Cancel every unfinished step of a workflow."""
    with state(ctx).client() as client:
        workflow = client.cancel_workflow(client.resolve_workflow_id(workflow_id))
    if json_out:
        render.print_json(workflow)
        return
    unfinished = sum(1 for s in workflow["steps"] or [] if s["state"] in ("pending", "running"))
    render.stdout_console().print(
        f"Cancel requested for workflow {workflow['id']}: {unfinished} step(s) still ending.")


@workflow_app.command("graph")
def draw(ctx: typer.Context, workflow_id: IdArg, json_out: JsonOpt = False) -> None:
    """Draw a workflow's DAG with each step's state."""
    with state(ctx).client() as client:
        workflow = client.get_workflow(client.resolve_workflow_id(workflow_id))
    if json_out:
        render.print_json({"id": workflow["id"], "state": workflow["state"], "nodes": [
            {"instance": s["instance"], "state": s["state"], "needs": s["needs"]}
            for s in workflow["steps"] or []]})
        return
    console = render.stdout_console()
    for line in graph(dict(workflow)):
        console.print(line, soft_wrap=True)


@workflow_app.command("events")
def events(ctx: typer.Context, workflow_id: IdArg, json_out: JsonOpt = False) -> None:
    """What happened to a workflow and its steps, oldest first."""
    with state(ctx).client() as client:
        items = client.workflow_events(client.resolve_workflow_id(workflow_id))
    if json_out:
        render.print_json({"items": items})
        return
    table = Grid([Col("WHEN"), Col("STEP"), Col("STATE"), Col("WHAT", text=True, wrap=True),
                  Col("BY", drop=1)])
    for e in items:
        table.add_row(render.when(e["at"]), e["instance"] or "-", e["state"], e["message"],
                      e["actor"])
    render.stdout_console().print(table)
