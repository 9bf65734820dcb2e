"""`gridgate simulate`: the metascheduler offline, on real workload logs (no gateway needed).

Replays Standard Workload Format logs (gzipped or not) as a federation of sites, one site
per log, each FCFS with EASY backfilling on its processors, with a routing policy on top;
or, with `--evaluate-predictions`, walks each log in time order scoring the queue-wait
predictor against its baselines. The simulator (gateway.scheduling) is imported inside
the command: the rest of the CLI never loads it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

# Typer's own choice type: it shows and checks choices as for an Enum option.
from typer._types import TyperChoice

from gateway.cli import errors, render

DEFAULT_WINDOW_DAYS = 180.0
DAY = 86400.0


# The registry's default (gateway.scheduling.policies.registry.DEFAULT): named here so
# the CLI loads no scheduling module until `simulate` parses its options.
DEFAULT_POLICY = "fastest"


class PolicyChoice(TyperChoice[str]):
    """`--policy`'s choices: the simulator's (gateway.scheduling.evaluation.simulation.policy_names:
    its baselines and the registered routing policies), read when the option is shown or
    parsed, so a policy registered in gateway/scheduling/policies/ is one at once."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> Sequence[str]:
        from gateway.scheduling.evaluation.simulation import policy_names

        return policy_names()

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        pass  # the simulator is the only source


class ForecastMode(StrEnum):
    """What `fastest` predicts waits from (gateway/scheduling/forecaster.py)."""

    combined = "combined"
    history = "history"
    projection = "projection"


TraceOpt = Annotated[list[Path], typer.Option(
    "--trace", metavar="LOG.swf[.gz]", exists=True, dir_okay=False, readable=True,
    show_default=False,
    help="A workload log in Standard Workload Format, gzipped or not; repeat it for a "
         "federation (one site per log).")]
PolicyOpt = Annotated[str, typer.Option(
    "--policy", click_type=PolicyChoice(),
    help="fastest: gridgate's router (earliest predicted completion); own: every job stays "
         "at its log's site; fewest-queued: the fitting site with the shortest queue.")]
ForecastOpt = Annotated[ForecastMode, typer.Option(
    "--forecast-mode", help="fastest's wait forecast: combined (production: the wait "
                            "history, classed by the live queue's projection), history, or "
                            "projection (the live queue alone).")]
WindowOpt = Annotated[float | None, typer.Option(
    "--window-days", min=0, metavar="DAYS", show_default=False,
    help=f"Replay only the first N days of each log (default {DEFAULT_WINDOW_DAYS:.0f} for a "
         "simulation, the whole log with --evaluate-predictions; 0: the whole log).")]
EvaluateOpt = Annotated[bool, typer.Option(
    "--evaluate-predictions",
    help="Score the queue-wait predictor on each log instead of simulating routing.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def _progress(what: str) -> Callable[[int, float], None]:
    def report(jobs: int, now: float) -> None:
        print(f"{what}: {jobs:,} jobs (day {now / DAY:.0f})", file=sys.stderr, flush=True)
    return report


def simulate(
    traces: TraceOpt,
    policy: PolicyOpt = DEFAULT_POLICY,
    forecast_mode: ForecastOpt = ForecastMode.combined,
    window_days: WindowOpt = None,
    evaluate_predictions: EvaluateOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Replay workload logs through the router and report waits and slowdowns.

    Prints mean and p95 wait, mean turnaround, mean bounded slowdown (10 s threshold) and
    utilisation, overall and per origin site. Exit 1 when a log cannot be read (the file
    and line are named).
    """
    from gateway.scheduling.evaluation import simulation
    from gateway.scheduling.swf import SwfError

    if evaluate_predictions:
        window = window_days or None
    else:
        window = DEFAULT_WINDOW_DAYS if window_days is None else window_days or None
    try:
        if evaluate_predictions:
            results = [simulation.evaluate_predictions(path, window, _progress(path.name))
                       for path in traces]
        else:
            summary = simulation.simulate(traces, policy, window, _progress("simulate"),
                                          forecast_mode.value)
    except SwfError as exc:
        raise errors.fail(f"error: {exc}") from None
    if evaluate_predictions:
        if json_out:
            render.print_json({"logs": results})
            return
        for result in results:
            render.stdout_console().print(predictions_table(result))
        return
    if json_out:
        render.print_json(summary)
        return
    console = render.stdout_console()
    console.print(overall_table(summary))
    console.print(origins_table(summary))
    console.print(sites_table(summary))


def duration(seconds: float | None) -> str:
    """Seconds as a short human duration."""
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def overall_table(summary: dict[str, Any]) -> Table:
    """The whole federation's figures."""
    window = summary["window_days"]
    scope = "whole logs" if window is None else f"first {window:g} days of each log"
    mode = summary["forecast_mode"]
    policy = summary["policy"] + (f", {mode} forecasts" if mode else "")
    table = Table(title=f"Policy {policy} ({scope})")
    for column in ("jobs", "mean wait", "p95 wait", "mean turnaround",
                   "mean bounded slowdown", "utilisation"):
        table.add_column(column, justify="right")
    overall = summary["overall"]
    table.add_row(f"{overall['jobs']:,}", duration(overall["mean_wait_s"]),
                  duration(overall["p95_wait_s"]), duration(overall["mean_turnaround_s"]),
                  _number(overall["mean_bounded_slowdown"]), _share(summary["utilisation"]))
    return table


def _site_column(table: Table, summary: dict[str, Any]) -> None:
    table.add_column("site", no_wrap=True,
                     min_width=max(map(len, summary["origins"]), default=4))


def origins_table(summary: dict[str, Any]) -> Table:
    """Per origin site: its own jobs' figures, wherever they ran."""
    table = Table(title="Each site's own jobs, wherever they ran",
                  caption="moved: the share of them that ran at another site")
    _site_column(table, summary)
    for column in ("jobs", "mean wait", "p95 wait", "bounded slowdown", "moved"):
        table.add_column(column, justify="right")
    for name, origin in summary["origins"].items():
        table.add_row(name, f"{origin['jobs']:,}", duration(origin["mean_wait_s"]),
                      duration(origin["p95_wait_s"]), _number(origin["mean_bounded_slowdown"]),
                      _share(origin["ran_elsewhere"]))
    return table


def sites_table(summary: dict[str, Any]) -> Table:
    """Per site: the load it ran."""
    table = Table(title="What each site ran")
    _site_column(table, summary)
    for column in ("processors", "jobs run", "utilisation"):
        table.add_column(column, justify="right")
    for name, site in summary["sites"].items():
        table.add_row(name, f"{site['processors']:,}", f"{site['jobs_run']:,}",
                      _share(site["utilisation"]))
    return table


def _brier(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"


def predictions_table(result: dict[str, Any]) -> Table:
    """Each method's hit rates on one log."""
    table = Table(title=f"Wait predictions on {result['log']} ({result['processors']:,} "
                        "processors)",
                  caption="±10 min, ±1 h: real start that close to the predicted one; "
                          "within 2x: of the jobs that waited over 10 min; worst class: "
                          "the size x time-limit class of 1,000 jobs or more least often "
                          "under the bound; bound width: the 95% bound's median; "
                          "if_late, class_if_late, rolling_if_late: the wait of a job not "
                          "started within 10 min, scored on the jobs that waited over 10 "
                          "min only; "
                          "Brier: the mean squared error of P(start within 10 min), lower "
                          "is better")
    table.add_column("method", no_wrap=True)
    for column in ("jobs", "predicted", "±10 min", "±1 h", "within 2x", "under bound",
                   "worst class", "bound width", "Brier"):
        table.add_column(column, justify="right")
    for name, scores in result["methods"].items():
        worst = scores.get("worst_class")
        table.add_row(name, f"{scores['jobs']:,}", f"{scores['predicted']:,}",
                      _share(scores["within_10min"]), _share(scores["within_1h"]),
                      _share(scores["waited_over_10min"]["within_2x"]),
                      _share(scores.get("under_bound")),
                      _share(worst["under_bound"]) if worst else "-",
                      duration(scores.get("median_bound_width_s")),
                      _brier(scores.get("start_within_10min_brier")))
    return table
