"""How the CLI shows API objects: raw JSON for programs, rich tables for people.

Every string that came from the gateway is shown as text, never as rich markup.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gateway.cli.columns import Col, Grid
from gateway.client.models import Event, Job, Site
from gateway.schemas.sites import SiteLoadOut as SiteLoad

if TYPE_CHECKING:
    from rich.progress import Progress

SHORT_ID = 8  # characters of a job id tables show; any unique start is accepted back

STATE_STYLES = {
    "ACCEPTED": "cyan", "STAGING_IN": "cyan", "QUEUED": "yellow", "RUNNING": "blue",
    "STAGING_OUT": "blue", "COMPLETED": "green", "FAILED": "red", "CANCELLED": "magenta",
}


# The width of output piped without $COLUMNS: whole lines, as `squeue | grep` expects.
PIPED_WIDTH = 100_000


def stdout_console() -> Console:
    """Styles on a terminal and tables at its width; plain text when piped, never cut
    (unless $COLUMNS asks for a width)."""
    # Built per call so tests that swap sys.stdout (CliRunner) are honoured.
    console = Console(file=sys.stdout, highlight=False, markup=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPED_WIDTH
    return console


def stderr_console() -> Console:
    # soft_wrap: messages stay one line, whatever the terminal width.
    return Console(file=sys.stderr, stderr=True, highlight=False, markup=False,
                   soft_wrap=True)


def transfer_progress(console: Console | None = None) -> Progress:
    """Progress bars (bytes, speed, time left) on stderr for uploads and downloads, in
    binary units (MiB, GiB) as `gridgate uploads` shows sizes."""
    from gateway.cli.files.progress import transfer_progress as bars  # rich.progress: on use

    return bars(console or stderr_console())


def print_json(data: Any) -> None:
    """The API's JSON, as received, on stdout (timestamps as the API writes them)."""
    plain = to_jsonable_python(data)
    sys.stdout.write(json.dumps(plain, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def when(moment: datetime | None) -> str:
    """An API timestamp in local time, to the second; '-' when absent."""
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # the API's naive times are UTC
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None) -> str:
    """Seconds as a person reads them: 45s, 12m30s, 3h05m, 2d04h; '-' when absent.
    Two units at most: a prediction is no more precise than that."""
    if seconds is None:
        return "-"
    total = max(0, round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s" if secs else f"{minutes}m"
    return f"{secs}s"


def state_text(state: str) -> Text:
    return Text(state, style=STATE_STYLES.get(state, ""))


def _text(value: object) -> Text:
    return Text("-" if value is None or value == "" else str(value))


def _site(job: Job) -> Text:
    # A `site: auto` job has no site until a routing pass in the worker places it.
    if job.get("site") is None and job.get("state") == "ACCEPTED":
        return Text("(routing)", style="dim")
    return _text(job.get("site"))


def short_when(moment: datetime | None, now: datetime | None = None) -> str:
    """An API timestamp in local time, as squeue shows one: the time of day when it is
    today, else the date and minute (with the year when not this year); '-' when absent."""
    if moment is None:
        return "-"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    local = moment.astimezone()
    today = (now or datetime.now(UTC)).astimezone().date()
    if local.date() == today:
        return local.strftime("%H:%M:%S")
    return local.strftime("%m-%d %H:%M" if local.year == today.year else "%Y-%m-%d %H:%M")


def _job_state(job: Job) -> Text:
    # A held job is ACCEPTED in the API; squeue users look for it as held.
    return Text("HELD", style="yellow") if job.get("held") and job["state"] == "ACCEPTED" \
        else state_text(job["state"])


def job_reason(job: Job) -> str:
    """Why a job waits, as squeue's REASON (Held, Dependency, waiting for a site: ...,
    or the scheduler's own, such as Priority), or why it ended; '-' once it runs."""
    state, reason = job["state"], job.get("reason")
    if job.get("held") and state == "ACCEPTED":
        return reason or "Held"
    if state in ("RUNNING", "COMPLETED"):
        return "-"  # a reason from its wait no longer holds
    if reason:
        return str(reason)
    if state == "ACCEPTED":
        return "waiting for routing" if job.get("site") is None else "being submitted"
    return "-"


def job_time(job: Job, now: datetime | None = None) -> Text:
    """How long a job has run (to its end), as squeue's TIME; before it starts, how long
    it has waited so far, in parentheses; '-' when it ended without running."""
    now = now or datetime.now(UTC)
    started, ended = job.get("started_at"), job.get("ended_at")
    if started is not None:
        return Text(duration(_seconds(started, ended or now)))
    if job["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
        return Text("-")
    return Text(f"({duration(_seconds(job['created_at'], now))})", style="dim")


def _seconds(start: datetime, end: datetime) -> float:
    def utc(moment: datetime) -> datetime:
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    return (utc(end) - utc(start)).total_seconds()


def job_label(job: Job) -> str:
    """How tables name a job: its short id, or, for a task of a job array, the array's
    short id and the task's index, as Slurm's JOBID_TASK (`7c41e2aa_3`); both are
    accepted back wherever a job id is."""
    return short_label(job["id"], job.get("array_job_id"), job.get("array_index"))


def short_label(job_id: str, array_job_id: str | None, array_index: int | None) -> str:
    """`job_label` from the parts (rows that are not a whole job: usage, reports)."""
    if array_job_id is not None:
        return f"{array_job_id[:SHORT_ID]}_{array_index}"
    return job_id[:SHORT_ID]


JOB_COLUMNS = (Col("ID"), Col("NAME", text=True), Col("STATE"), Col("SITE", drop=2),
               Col("EXIT", drop=5, justify="right"), Col("PROJECT", drop=6),
               Col("CREATED", drop=4), Col("TIME", drop=3),
               Col("REASON", text=True, least=24))


def jobs_table(jobs: Sequence[Job], now: datetime | None = None) -> Grid:
    """One job per line, as squeue shows them: short ids (any unique start of an id is
    accepted back; array tasks as ARRAY_INDEX), why a job waits, how long it has run.
    Narrow terminals leave out PROJECT, EXIT, CREATED, TIME, SITE in that order; a long
    name or reason ends in '…' (`gridgate show` has all of it)."""
    table = Grid(JOB_COLUMNS)
    for job in jobs:
        table.add_row(Text(job_label(job)), _text(job["name"]), _job_state(job),
                      _text(job.get("site")), _text(job.get("exit_code")),
                      _text(job.get("project")),
                      Text(short_when(job.get("created_at"), now)), job_time(job, now),
                      Text(job_reason(job)))
    return table


def results_table(done: str, results: Sequence[Mapping[str, Any]]) -> Grid:
    """One line per job a bulk command acted on: its new state, or why not."""
    table = Grid([Col("ID"), Col("NAME", text=True), Col("RESULT", text=True, wrap=True)])
    for r in results:
        job, array = r.get("job"), r.get("array")
        if job is not None:
            table.add_row(Text(job_label(job)), _text(job["name"]),
                          Text(f"{done} (now {job['state']})", style="green"))
        elif array is not None:
            states = ", ".join(f"{n} {s}" for s, n in sorted(array["task_states"].items()))
            table.add_row(Text(r["id"][:SHORT_ID]), _text(array["name"]),
                          Text(f"{done} for job array {r['id']} (tasks now: {states})",
                               style="green"))
        else:
            problem = r.get("error") or {}
            table.add_row(Text(r["id"][:SHORT_ID]), Text("-"),
                          Text(str(problem.get("detail") or problem.get("title") or "failed"),
                               style="red"))
    return table


def job_details(job: Job) -> Table:
    """A two-column view of one job, then its attempts."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    spec = job.get("spec") or {}
    resources = spec.get("resources") or {}
    program = spec.get("executable") or "(script)"
    rows: list[tuple[str, Text]] = [
        ("ID", _text(job["id"])),
        *([("Array task", Text(f"{job['array_index']} of job array {job['array_job_id']} "
                                f"({job_label(job)})"))] if job.get("array_job_id") else []),
        ("Name", _text(job["name"])),
        ("State", state_text(job["state"])),
        ("Reason", _text(job.get("reason"))),
        ("Raw state", _text(job.get("raw_state"))),
        ("Exit code", _text(_exit_codes(job))),
        ("Site", _site(job)),
        ("Owner", _text(job.get("owner"))),
        ("Project", _text(job.get("project"))),
        ("Program", Text(" ".join([str(program), *map(str, spec.get("args") or [])]))),
        ("Resources", Text(f"{resources.get('nodes', 1)} node(s), "
                           f"{resources.get('ranks', 1)} rank(s), walltime "
                           f"{resources.get('walltime', '-')} s")),
        ("Labels", _text(", ".join(f"{k}={v}" for k, v in (job.get("labels") or {}).items()))),
        ("Origin", _text("GA4GH TES" if job.get("origin") == "tes" else "gridgate API")),
        ("Cancel requested", _text("yes" if job.get("cancel_requested") else "no")),
        ("Held", _text("yes (gridgate release to let it run)" if job.get("held") else "no")),
        ("Created", _text(when(job.get("created_at")))),
        ("Started", _text(when(job.get("started_at")))),
        ("Ended", _text(when(job.get("ended_at")))),
    ]
    for name, value in rows:
        table.add_row(name, value)
    return table


def _exit_codes(job: Job) -> object:
    """The job's exit code, and each step's for a job of several (its newest run's)."""
    attempts = job.get("attempts") or []
    steps = attempts[-1].get("step_exit_codes") if attempts else None
    if not steps:
        return job.get("exit_code")
    return f"{job.get('exit_code')} (steps: {', '.join(map(str, steps))})"


def attempts_table(job: Job) -> Grid | None:
    attempts = job.get("attempts") or []
    if not attempts:
        return None
    table = Grid([Col("#"), Col("SITE"), Col("NATIVE ID"), Col("STATE"), Col("RAW", drop=3),
                  Col("EXIT", drop=2), Col("SUBMITTED", drop=1), Col("ENDED", drop=4),
                  Col("REASON", text=True, wrap=True)], title="Attempts")
    for a in attempts:
        table.add_row(_text(a["number"]), _text(a["site"]), _text(a.get("native_id")),
                      state_text(a["state"]), _text(a.get("raw_state")),
                      _text(a.get("exit_code")), _text(when(a.get("submitted_at"))),
                      _text(when(a.get("ended_at"))), _text(a.get("reason")))
    return table


def events_table(events: Sequence[Event]) -> Grid:
    """A job's history; narrow terminals leave out RAW, then FROM (the line above)."""
    table = Grid([Col("AT"), Col("FROM", drop=1), Col("TO"), Col("ACTOR"), Col("RAW", drop=2),
                  Col("REASON", text=True, wrap=True)])
    for e in events:
        table.add_row(_text(when(e["at"])), _text(e.get("from_state")),
                      state_text(e["to_state"]), _text(e.get("actor")),
                      _text(e.get("raw_state")), _text(e.get("reason")))
    return table


def _isolation(value: str | None) -> Text:
    if value == "none":
        return Text("none (gateway account only)", style="yellow")
    return _text(value)


def sites_table(sites: Sequence[Site]) -> Group:
    """One site per line; why a site is down or out of routing (long free text) on lines
    of its own below the table, whole."""
    table = Grid([Col("NAME"), Col("KIND", drop=3), Col("STATE"), Col("ENABLED", drop=4),
                  Col("DRAINED", drop=5), Col("NODES", drop=2), Col("CORES/NODE", drop=6),
                  Col("ISOLATION", drop=1), Col("DESCRIPTION", text=True)])
    notes: list[Text] = []
    for s in sites:
        state = Text(str(s.get("state", "-")),
                     style={"up": "green", "down": "red"}.get(str(s.get("state")), ""))
        if s.get("reason"):
            notes.append(Text(f"{s.get('name')} is {s.get('state')}: {s['reason']}"))
        if s.get("routing_ban"):
            state.append(", out of routing", style="red")
            notes.append(Text(f"{s.get('name')} is out of routing: {s['routing_ban']}",
                              style="red"))
        table.add_row(_text(s.get("name")), _text(s.get("kind")), state,
                      _text("yes" if s.get("enabled") else "no"),
                      _text("yes" if s.get("drained") else "no"),
                      _text(s.get("max_nodes")), _text(s.get("cores_per_node")),
                      _isolation(s.get("isolation")), _text(s.get("description")))
    return Group(table, *([Text(""), *notes] if notes else []))


def _ago(moment: datetime, now: datetime) -> str:
    return f"{duration((now - moment).total_seconds())} ago"


def _load_cells(load: SiteLoad | None, now: datetime) -> list[Text]:
    if load is None:
        return [Text("-") for _ in range(6)]
    probe = load["probe"]
    free, total = load["free_cores"], load["total_cores"]
    cores = "-" if free is None else f"{free}/{total}" if total is not None else str(free)
    return [_text(load["queued_jobs"]), _text(load["running_jobs"]), Text(cores),
            Text(duration(probe["wait_median"])), Text(duration(probe["wait_bound"])),
            Text(_ago(load["taken_at"], now))]


def load_table(sites: Sequence[Site], now: datetime | None = None) -> Grid:
    """Each site's live load at its last queue snapshot (a routing pass takes one while
    jobs wait for a site): queued and running jobs, free of total cores, and the
    predicted wait of a 1-node, 1-hour job (median and 95% bound); '-' before any."""
    now = now or datetime.now(UTC)
    table = Grid([Col("NAME"), Col("QUEUED"), Col("RUNNING"), Col("FREE CORES"), Col("WAIT"),
                  Col("WAIT 95%", drop=1), Col("SNAPSHOT", drop=2)],
                 title="Load (waits: a 1-node, 1-hour job)")
    for s in sites:
        table.add_row(_text(s.get("name")), *_load_cells(s.get("load"), now))
    return table
