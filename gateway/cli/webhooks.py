"""`gridgate webhook create|list|deliveries|redeliver|delete`: subscriptions to job events,
POSTed by the gateway's worker to a URL, signed per Standard Webhooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.schemas.webhooks import DeliveryOut, WebhookOut

webhook_app = typer.Typer(help="Webhooks: job events POSTed to a URL of yours, signed.",
                          no_args_is_help=True, add_completion=False)
HookArg = Annotated[str, typer.Argument(metavar="ID", help="Webhook id (from `list`).")]
STYLES = {"active": "green", "disabled": "red", "delivered": "green", "pending": "yellow",
          "failed": "red"}


@webhook_app.command("create")
def create(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(metavar="URL", help="Where to POST (https).")],
    types: Annotated[list[str] | None, typer.Option(
        "--type", metavar="TYPE", help="Only this event type (repeatable; default: all).")
    ] = None,
    jobs: Annotated[list[str] | None, typer.Option(
        "--job", metavar="ID", help="Only this job's events (repeatable; default: all "
        "jobs you may read).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Subscribe URL to the events of your jobs, from now on. Prints the signing secret:
    it is shown this once, keep it to verify deliveries."""
    with state(ctx).client() as client:
        created = client.create_webhook(url, types or (), jobs or ())
    if json_out:
        render.print_json(created)
        return
    err = render.stderr_console()
    err.print(f"Webhook {created['id']} sends to {created['url']}.")
    err.print("Its signing secret, shown only now (verify deliveries with it):")
    print(created["secret"])


def webhooks_table(items: Sequence[WebhookOut]) -> Grid:
    """ID, URL, state (with why when disabled), filters."""
    table = Grid([Col("ID"), Col("URL", text=True, wrap=True), Col("STATE", wrap=True),
                  Col("FILTERS", drop=1, wrap=True)])
    for hook in items:
        shown = Text(hook["state"], style=STYLES.get(hook["state"], ""))
        if hook["disabled_reason"]:
            shown.append(f": {hook['disabled_reason']}")
        filters = ", ".join([*hook["types"], *hook["jobs"]]) or "all"
        table.add_row(Text(hook["id"]), Text(hook["url"]), shown, Text(filters))
    return table


@webhook_app.command("list")
def list_webhooks(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Your webhooks; a disabled one says why."""
    with state(ctx).client() as client:
        items = client.webhooks()
    if json_out:
        render.print_json({"items": items})
        return
    if not items:
        render.stderr_console().print("No webhooks; `gridgate webhook create URL` adds one.")
        return
    render.stdout_console().print(webhooks_table(items))


def deliveries_table(items: Sequence[DeliveryOut]) -> Grid:
    table = Grid([Col("DELIVERY"), Col("EVENT"), Col("JOB"), Col("STATE"), Col("TRIES"),
                  Col("LAST", text=True, wrap=True, drop=1)])
    for d in items:
        last = d["last_error"] or (f"HTTP {d['last_status']}" if d["last_status"] else "")
        table.add_row(Text(str(d["id"])), Text(d["message_id"]), Text(d["subject"]),
                      Text(d["state"], style=STYLES.get(d["state"], "")),
                      Text(str(d["attempts"])), Text(last))
    return table


@webhook_app.command("deliveries")
def deliveries(ctx: typer.Context, webhook_id: HookArg,
               limit: Annotated[int, typer.Option(min=1, max=500,
                                                  help="How many, newest first.")] = 50,
               json_out: JsonOpt = False) -> None:
    """The webhook's deliveries, newest first: state, tries, the target's last answer."""
    with state(ctx).client() as client:
        items = client.webhook_deliveries(webhook_id, limit)
    if json_out:
        render.print_json({"items": items})
        return
    if not items:
        render.stderr_console().print("No deliveries yet.")
        return
    render.stdout_console().print(deliveries_table(items))


@webhook_app.command("redeliver")
def redeliver(ctx: typer.Context, webhook_id: HookArg,
              delivery: Annotated[int, typer.Argument(metavar="DELIVERY", min=1,
                                                      help="Delivery id (`deliveries`).")],
              json_out: JsonOpt = False) -> None:
    """Send a delivery again now (same webhook-id); enables a disabled webhook."""
    with state(ctx).client() as client:
        done = client.redeliver(webhook_id, delivery)
    if json_out:
        render.print_json(done)
        return
    render.stderr_console().print(f"Delivery {done['id']} (event {done['event_id']}) will "
                                  "be sent again shortly.")


@webhook_app.command("delete")
def delete(ctx: typer.Context, webhook_id: HookArg) -> None:
    """Delete a webhook: nothing more is sent to it."""
    with state(ctx).client() as client:
        client.delete_webhook(webhook_id)
    render.stderr_console().print(f"Deleted webhook {webhook_id}")


__all__ = ["webhook_app"]
