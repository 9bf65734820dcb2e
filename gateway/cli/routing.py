"""Routing commands: `estimate` (where a spec would go now, nothing submitted) and
`explain` (the decision that placed a job, as it was made). Both show one row per site:
chosen, a candidate, or excluded and why, with the forecast that ranked it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from gateway.cli import render
from gateway.cli.columns import Col, Grid
from gateway.cli.files.inputs import upload_inputs
from gateway.cli.jobs.commands import JobArg, JsonOpt
from gateway.cli.jobs.spec import SpecFlags, build_spec, load_spec_file
from gateway.cli.state import state
from gateway.schemas.placements import CandidateOut, EstimateOut

STATUS_STYLES = {"chosen": "green", "candidate": "", "excluded": "red"}


def _status(candidate: CandidateOut, chosen: list[str]) -> str:
    if candidate["site"] in chosen:
        return "chosen"
    return "excluded" if candidate["excluded"] is not None else "candidate"


def candidates_table(decision: EstimateOut) -> Grid:
    """One row per site, in ranked order: its status, its forecast (durations from the
    decision), its quote when routing priced the job, and where the wait came from, or
    why the site was excluded. Narrow terminals leave out IF LATER, STAGING, RUN, WAIT 95%,
    LIKELY and the quote, in that order; the reason wraps."""
    deadline = decision["policy"] == "deadline" or decision["deadline"] is not None
    priced = any("quote_su" in c for c in decision["candidates"])
    # LIKELY: the wait most likely within 10 min (what to tell); IF LATER: the wait if
    # the job has not started within those 10 min; WAIT: the median routing ranks by.
    columns = [Col("SITE"), Col("STATUS"), Col("LIKELY", drop=2), Col("IF LATER", drop=6),
               Col("WAIT"),
               Col("WAIT 95%", drop=3), Col("RUN", drop=4), Col("STAGING", drop=5),
               Col("COMPLETION")]
    columns += [Col("QUOTE (SU)", drop=1, justify="right")] if priced else []
    columns += [Col("P(DEADLINE)")] if deadline else []
    table = Grid([*columns, Col("BASIS / REASON", text=True, wrap=True, least=20)])
    for c in decision["candidates"]:
        status = _status(c, decision["chosen"])
        f = c["forecast"]
        times = ([render.duration(f.get("wait_likely")),
                  render.duration(f.get("wait_if_late")), render.duration(f["wait_median"]),
                  render.duration(f["wait_bound"]), _run_time(f["runtime"]),
                  render.duration(f["staging"]), render.duration(f["completion"])]
                 if f is not None else ["-"] * 7)
        row = [Text(c["site"]), Text(status, style=STATUS_STYLES[status]),
               *(Text(t) for t in times)]
        if priced:
            row.append(Text(c.get("quote_su", "-")))
        if deadline:
            p = c["p_deadline"]
            row.append(Text("-" if p is None else f"{p:.0%}"))
        reason = (c["excluded"] if c["excluded"] is not None else f["basis"] if f
                  else unforecast(c))
        if c["excluded"] is None and "image" in c:
            reason += f"; {c['image']}"
        if "caution" in c:
            reason += f"; {c['caution']}"
        row.append(Text(reason))
        table.add_row(*row)
    return table


def unforecast(candidate: CandidateOut) -> str:
    """Why an open site has no forecast: routing ranked only the sites that could come
    first (and the runner-up), and this one cannot finish the job before them."""
    bound = candidate.get("not_before")
    return "-" if bound is None else (f"not forecast: it cannot finish here within "
                                      f"{render.duration(bound)}, after the leaders")


def _run_time(seconds: float | None) -> str:
    # None: no earlier run of the program to predict from (the basis says what routing
    # assumed instead); never shown as a time, least of all 0s.
    return "unknown" if seconds is None else render.duration(seconds)


def _print_decision(decision: EstimateOut, heading: str) -> None:
    console = render.stdout_console()
    console.print(heading, soft_wrap=True)
    console.print(candidates_table(decision))
    console.print(Text(decision["why"]), soft_wrap=True)  # one line, whatever the width


def _policy(decision: EstimateOut) -> str:
    words = f"policy {decision['policy']}"
    if decision["hedge"] > 1:
        words += f", hedge {decision['hedge']}"
    if decision["deadline"] is not None:
        words += f", deadline {render.when(decision['deadline'])}"
    return words


def estimate(
    ctx: typer.Context,
    spec_file: Annotated[Path, typer.Argument(
        metavar="SPEC", help="A job spec file (.yaml/.yml/.json), as `gridgate submit` takes.")],
    ranks: Annotated[int | None, typer.Option(help="MPI ranks (processes).")] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes.")] = None,
    walltime: Annotated[str | None, typer.Option(
        help="Time limit: seconds or [D-][HH:]MM:SS.")] = None,
    site: Annotated[str | None, typer.Option(help="Site name, or 'auto'.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Where a job would run now, and when it would start and finish at each site
    (nothing is submitted). Times are predictions: a median and a 95% bound; RUN is
    "unknown" until the program has run before. Inputs that are files on this machine are
    uploaded first, as `gridgate submit` does (a later submit reuses the uploads).

    \b
      gridgate estimate job.yaml
      gridgate estimate job.yaml --ranks 64 --walltime 2:00:00
    """
    flags = SpecFlags(ranks=ranks, nodes=nodes, walltime=walltime, site=site)
    spec = build_spec(load_spec_file(spec_file), flags)
    with state(ctx).client() as client:
        # As submit sends it: local inputs and image as uploads (the gateway takes no other
        # source, times their staging by their sizes and reads an image's MPI to tell
        # which sites can run it); submitting the spec afterwards reuses the uploads.
        decision = client.estimate(upload_inputs(client, spec, spec_file.parent))
    if json_out:
        render.print_json(decision)
        return
    _print_decision(decision, f"Estimate at {render.when(decision['decided_at'])} "
                              f"({_policy(decision)}):")


def explain(ctx: typer.Context, job_id: JobArg, json_out: JsonOpt = False) -> None:
    """Why a job runs where it does: the routing decision that placed it, with every
    site it was weighed against (excluded and why, or its forecast) as it was then."""
    with state(ctx).client() as client:
        decision = client.placement(job_id)
    if json_out:
        render.print_json(decision)
        return
    _print_decision(decision, f"Job {decision['job_id']} placed at "
                              f"{render.when(decision['decided_at'])} ({_policy(decision)}):")
