"""`gridgate report allocations|usage|waits|adjustments` (committee reports, as of any
past time) and `gridgate usage` (your jobs, sacct-like). Tables by default; `--json`
prints the API's document, `--csv` the API's CSV."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.client.api import ReportKind

report_app = typer.Typer(
    help="Reports for allocation committees: balances, usage, waits, refunds and "
         "adjustments, each as of any past time.", no_args_is_help=True)

ProjectOpt = Annotated[str | None, typer.Option(
    help="One project (default: every project you may read).")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", metavar="TIME",
    help="As of this time (RFC 3339, e.g. 2026-10-01T00:00:00Z; no zone means UTC).")]
SinceOpt = Annotated[str | None, typer.Option(metavar="TIME", help="From this time.")]
UntilOpt = Annotated[str | None, typer.Option(metavar="TIME", help="Up to this time "
                                                                    "(exclusive).")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print the API's CSV.")]


def _params(**values: object) -> list[tuple[str, str]]:
    return [(k, str(v)) for k, v in values.items() if v is not None]


def _money(value: float | None) -> Text:
    # SU to the milli-SU the ledger keeps, as the API and the dashboard show them.
    return Text("-" if value is None else f"{value:,.3f}", justify="right")


def _table(columns: Sequence[str | Col]) -> Grid:
    # Plain names are columns always shown whole (render's width rule: gateway.cli.columns).
    return Grid([c if isinstance(c, Col) else Col(c) for c in columns])


def _show(ctx: typer.Context, kind: ReportKind, params: list[tuple[str, str]], json_out: bool,
          csv_out: bool, draw: Callable[[Any], None]) -> None:
    if json_out and csv_out:
        raise typer.BadParameter("--json and --csv exclude each other.")
    with state(ctx).client() as client:
        if csv_out:
            sys.stdout.write(client.report_csv(kind, params))
            return
        report = client.report(kind, params)
    if json_out:
        render.print_json(report)
        return
    draw(report)
    render.stderr_console().print(f"As of {render.when(report['as_of'])}. {report['basis']}")


def _allocations(report: Any) -> None:
    # Narrow terminals leave out HELD, SU/DAY, POOL, ENDS, AWARDED and USED, in that order.
    table = _table(["ID", "PROJECT", Col("POOL", drop=4), "STATUS", Col("AWARDED", drop=2),
                    Col("USED", drop=1), Col("HELD", drop=6), "REMAINING",
                    Col("SU/DAY", drop=5), "RUNS OUT", Col("ENDS", drop=3)])
    for a in report["allocations"]:
        runs_out = render.when(a["exhausts_at"])[:10] if a["exhausts_at"] else "never"
        table.add_row(
            str(a["id"]), a["project"], "federation" if a["pool"] == "*" else a["pool"],
            a["status"], _money(a["awarded_su"]), _money(a["used_su"]), _money(a["held_su"]),
            _money(a["remaining_su"]), _money(a["burn_su_per_day"]),
            Text(runs_out, style="red" if a["exhausts_before_end"] else ""),
            render.when(a["ends_at"])[:10])
    render.stdout_console().print(table)


def allocations(ctx: typer.Context, project: ProjectOpt = None, as_of: AsOfOpt = None,
                window_days: Annotated[int, typer.Option(
                    min=1, max=3650, help="Days of usage the burn rate is taken over.")] = 30,
                json_out: JsonOpt = False, csv_out: CsvOpt = False) -> None:
    """Per allocation: awarded, used, held, remaining, burn rate, projected exhaustion."""
    _show(ctx, "allocations", _params(project=project, as_of=as_of, window_days=window_days),
          json_out, csv_out, _allocations)


def _usage(report: Any) -> None:
    site = report["by"] == "site"
    table = _table([report["by"].upper(), "JOBS", "RUNS", "CORE-HOURS",
                    *(["SU/CORE-HOUR"] if site else []), "CHARGED", "REFUNDED", "NET SU"])
    for r in [*report["rows"], report["total"]]:
        rate = ([f"{r['su_per_core_hour']:g} (v{r['rate_card_version']})"
                 if r["su_per_core_hour"] is not None else "-"] if site else [])
        table.add_row(r["key"], str(r["jobs"]), str(r["runs"]), f"{r['core_hours']:.3f}",
                      *rate, _money(r["charged_su"]), _money(r["refunded_su"]),
                      _money(r["net_su"]))
    render.stdout_console().print(table)


def usage_report(
    ctx: typer.Context,
    by: Annotated[str, typer.Option(help="Group by site, user, project or size "
                                         "(cores).")] = "site",
    project: ProjectOpt = None, since: SinceOpt = None, until: UntilOpt = None,
    as_of: AsOfOpt = None, json_out: JsonOpt = False, csv_out: CsvOpt = False,
) -> None:
    """Usage (jobs, runs, core-hours, SU) by site, user, project or job size."""
    _show(ctx, "usage", _params(by=by, project=project, since=since, until=until,
                                as_of=as_of), json_out, csv_out, _usage)


def _waits(report: Any) -> None:
    table = _table(["SITE", "JOBS", "WAIT P50", "WAIT P90", "MEAN", "FINISHED",
                    "EXPANSION"])
    for r in report["rows"]:
        factor = r["expansion_factor"]
        table.add_row("all sites" if r["site"] == "*" else r["site"], str(r["jobs"]),
                      render.duration(r["wait_p50"]),
                      render.duration(r["wait_p90"]),
                      render.duration(r["wait_mean"]), str(r["finished"]),
                      "-" if factor is None else f"{factor:.2f}")
    render.stdout_console().print(table)


def waits(ctx: typer.Context, project: ProjectOpt = None, since: SinceOpt = None,
          until: UntilOpt = None, as_of: AsOfOpt = None, json_out: JsonOpt = False,
          csv_out: CsvOpt = False) -> None:
    """Queue wait p50/p90 and expansion factor per site."""
    _show(ctx, "waits", _params(project=project, since=since, until=until, as_of=as_of),
          json_out, csv_out, _waits)


def _adjustments(report: Any) -> None:
    table = _table(["WHEN", "KIND", "ALLOCATION", "PROJECT", "SU", "BY", "JOB",
                    Col("REASON", text=True, wrap=True)])
    for r in report["rows"]:
        table.add_row(render.when(r["at"]), r["kind"], str(r["allocation_id"]), r["project"],
                      _money(r["amount_su"]), r["actor"],
                      r["job_id"][:render.SHORT_ID] if r["job_id"] else "-",
                      r["reason"] or "-")
    render.stdout_console().print(table)


def adjustments(ctx: typer.Context, project: ProjectOpt = None, since: SinceOpt = None,
                until: UntilOpt = None, as_of: AsOfOpt = None, json_out: JsonOpt = False,
                csv_out: CsvOpt = False) -> None:
    """Refunds and adjustments, with their reasons and who approved them."""
    _show(ctx, "adjustments", _params(project=project, since=since, until=until,
                                      as_of=as_of), json_out, csv_out, _adjustments)


report_app.command("allocations")(allocations)
report_app.command("usage")(usage_report)
report_app.command("waits")(waits)
report_app.command("adjustments")(adjustments)


def elapsed(seconds: int | None) -> str:
    """Seconds as sacct writes them: [D-]HH:MM:SS; '-' when unknown."""
    if seconds is None:
        return "-"
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


def usage(
    ctx: typer.Context,
    since: SinceOpt = None, until: UntilOpt = None,
    state_filter: Annotated[list[str] | None, typer.Option(
        "--state", help="Only jobs in this state (repeatable).")] = None,
    project: Annotated[str | None, typer.Option(
        help="A project's jobs (a PI sees everyone's; a member their own).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many "
                                                               "jobs.")] = 1000,
    json_out: JsonOpt = False, csv_out: CsvOpt = False,
) -> None:
    """Your jobs, newest first, as sacct shows them: elapsed time, cores and charge; an
    array's tasks as ARRAY_INDEX, by index. A job without a usage record (run before
    allocations were enforced) shows what the gateway saw of it, '-' where nothing."""
    if json_out and csv_out:
        raise typer.BadParameter("--json and --csv exclude each other.")
    params = _params(since=since, until=until, project=project, limit=limit)
    params += [("state", s.upper()) for s in state_filter or []]
    with state(ctx).client() as client:
        if csv_out:
            sys.stdout.write(client.report_csv("usage-jobs", params))
            return
        found = client.usage(params)
    if json_out:
        render.print_json(found)
        return
    if not found["jobs"]:
        render.stderr_console().print("No jobs.")
        return
    table = _table(["JOB", "NAME", "SITE", "STATE", "ELAPSED", "CORES", "CHARGE SU"])
    for j in found["jobs"]:
        cores = "-" if j["cores"] is None else str(j["cores"])
        table.add_row(render.short_label(j["job_id"], j["array_job_id"], j["array_index"]),
                      j["name"], j["site"] or "-", render.state_text(j["state"]),
                      elapsed(j["elapsed"]), cores, _money(j["charge_su"]))
    render.stdout_console().print(table)
