"""Job commands: submit, list, show, events, logs, wait (cancel, hold, release:
job_control)."""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Annotated, BinaryIO

import typer

from gateway.cli import errors, render
from gateway.cli.files.inputs import InputOpt, upload_inputs
from gateway.cli.jobs import ids as job_ids
from gateway.cli.jobs.spec import SpecFlags, build_spec, load_spec_file, pairs
from gateway.cli.jobs.waiting import (
    job_exit_code,
    keeps_running,
    show_failure,
    tail_lines,
    wait_for,
)
from gateway.cli.state import state
from gateway.client.api import Stream
from gateway.client.job_ids import resolve_array_id
from gateway.client.models import FINAL_STATES, STARTED_STATES, Job
from gateway.domain.state_names import accepted_names

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's JSON instead of a table.")]
JobArg = Annotated[str, typer.Argument(
    metavar="JOB", help="Job id, or any unique start of it (e.g. the 8 characters `list` "
    "shows).", callback=job_ids.resolve_one)]


class Until(enum.StrEnum):
    """What `gridgate wait` waits for."""

    ENDED = "ended"
    RUNNING = "running"

    @property
    def states(self) -> frozenset[str]:
        return FINAL_STATES if self is Until.ENDED else STARTED_STATES


class Origin(enum.StrEnum):
    """The door a job came in by (the API's `origin`)."""

    API = "api"
    TES = "tes"


TimeoutOpt = Annotated[float | None, typer.Option(
    "--timeout", min=0, help="Give up waiting after this many seconds (exit 124).")]
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def submit(
    ctx: typer.Context,
    words: Annotated[list[str] | None, typer.Argument(
        metavar="[SPEC] [-- ARGS...]",
        help="A job spec file (.yaml/.yml/.json), then arguments that replace its 'args'. "
             "With --exe or --file, every word is an argument of the program.")] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", "-f", help="The job spec file (when the words are all program args).")]
    = None,
    name: Annotated[str | None, typer.Option(help="Job name.")] = None,
    exe: Annotated[str | None, typer.Option("--exe", help="Program to run.")] = None,
    ranks: Annotated[int | None, typer.Option(help="MPI ranks (processes).")] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes.")] = None,
    walltime: Annotated[str | None, typer.Option(
        help="Time limit: seconds or [D-][HH:]MM:SS.")] = None,
    mpi: Annotated[str | None, typer.Option(
        help="MPI launcher[:flavor], e.g. mpirun:mpich, srun, none.")] = None,
    site: Annotated[str | None, typer.Option(help="Site name, or 'auto'.")] = None,
    project: Annotated[str | None, typer.Option(help="Project to charge.")] = None,
    env: Annotated[list[str] | None, typer.Option(
        "--env", "-e", help="Environment variable K=V (repeatable).")] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", "-l", help="Label k=v (repeatable).")] = None,
    input_files: InputOpt = None,
    dependency: Annotated[str | None, typer.Option(
        "--dependency", "-d", metavar="TYPE:JOB[:JOB][,TYPE:JOB]", help=(
            "Start only after other jobs ended: afterok (completed), afterany (ended), "
            "afternotok (failed or cancelled); a job array's id means all its tasks."))]
    = None,
    array: Annotated[str | None, typer.Option(
        "--array", "-a", metavar="INDICES[%N]", help=(
            "Submit a job array: 0-9, 1,3,5-7, 0-99:2; '%N' runs at most N tasks at once. "
            "Each task sees its index in GRIDGATE_ARRAY_TASK_ID."))] = None,
    mail_type: Annotated[str | None, typer.Option(
        "--mail-type", metavar="TYPE[,TYPE]", help=(
            "Mail when the job begins, ends or fails, as sbatch: begin, end, fail, all "
            "(or none); to your verified address unless --mail-user."))] = None,
    mail_user: Annotated[str | None, typer.Option(
        "--mail-user", metavar="ADDRESS", help=(
            "Where the mail goes: your verified address, or one in a domain the gateway "
            "allows."))] = None,
    wait: Annotated[bool, typer.Option(
        "--wait", "-w", help="Wait for the job to end; exit like `gridgate wait`.")] = False,
    timeout: TimeoutOpt = None,
    idempotency_key: Annotated[str | None, typer.Option(
        help="Retrying with the same key and body returns the same job, never a second one.")]
    = None,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Print only the job id on stdout.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Submit a job from a spec file and/or flags.

    The job runs in a fresh, empty directory of its own at the site. Inputs whose source
    is a file on this machine (`source: ./data.csv`, relative to the spec file, or
    `--input FILE`) are uploaded first (resumable) and placed there.

    \b
      gridgate submit job.yaml
      gridgate submit job.yaml --ranks 4 -- input.dat
      gridgate submit --exe python3 --input fit.py -- fit.py
      gridgate submit --name hello --exe echo -- hello world
      gridgate submit job.yaml --array 0-99%10      (a job array: 100 tasks, 10 at once)
      gridgate submit job.yaml --dependency afterok:d3eca39f
      gridgate submit job.yaml --mail-type end,fail
    """
    words = list(words or [])
    spec_path = file
    if spec_path is None and exe is None and words:
        spec_path = Path(words.pop(0))
        if spec_path.suffix.lower() not in SPEC_SUFFIXES and not spec_path.is_file():
            raise errors.fail(f"error: {spec_path} is not a job spec file (.yaml/.yml/.json); "
                              "to run a program give --exe PROGRAM.", errors.USAGE)
    if spec_path is None and exe is None:
        raise errors.fail("error: give a job spec file, or --exe PROGRAM (see --help).",
                          errors.USAGE)
    base = load_spec_file(spec_path) if spec_path is not None else {}
    flags = SpecFlags(name=name, executable=exe, args=words if words or exe else None,
                      ranks=ranks, nodes=nodes, walltime=walltime, mpi=mpi, site=site,
                      project=project, env=env or [], labels=label or [],
                      inputs=input_files or [], mail_type=mail_type, mail_user=mail_user)
    spec = build_spec(base, flags)
    if array is not None:
        spec["array"] = array
    if wait and "array" in spec:
        raise errors.fail("error: --wait follows one job; list an array's tasks with "
                          "`gridgate list --array ARRAY`.", errors.USAGE)
    cli = state(ctx)
    # Here, not at the top: the workflows package's pydantic models are built on import,
    # which every other job command (list, show) would pay for.
    from gateway.cli.jobs import relations

    with cli.client() as client:
        if dependency is not None:
            spec["depends_on"] = relations.depends_on(client, dependency)
        spec = upload_inputs(client, spec, spec_path.parent if spec_path else Path("."))
        job = client.submit(spec, idempotency_key=idempotency_key)
        # From here on, Ctrl-C stops this command, never the job: say so.
        with keeps_running(cli, job["id"], "waiting" if wait else "submitting"):
            if json_out and not wait:
                render.print_json(job)
            elif job["array_job_id"] is not None:  # as sbatch: the array's id
                _submitted_array(job, relations.task_count(spec), quiet)
            elif quiet:
                print(job["id"], flush=True)
            elif not json_out:
                print(f"Submitted job {job['id']} ({job['state']})", flush=True)
            if not wait:
                return
            final = wait_for(client, job["id"], timeout=timeout)
        if json_out:
            render.print_json(client.get_job(job["id"]))
        else:
            show_failure(client, cli, final)
        raise typer.Exit(job_exit_code(final))


def _submitted_array(first: Job, count: int | None, quiet: bool) -> None:
    array_id = first["array_job_id"]
    if quiet:
        print(array_id, flush=True)
        return
    tasks = f"{count} tasks" if count is not None else "tasks"
    print(f"Submitted job array {array_id} ({tasks}, {first['state']}; task "
          f"{render.job_label(first)} is job {first['id']})", flush=True)


def list_jobs(
    ctx: typer.Context,
    state_filter: Annotated[list[str] | None, typer.Option(
        "--state", "-t", metavar="STATE[,STATE]", help=(
            "Only jobs in these states (repeatable, or comma-separated; any case): "
            f"{accepted_names()}."))] = None,
    name: Annotated[str | None, typer.Option(
        "--name", "-n", help="Only jobs of this name, or whose name matches this glob "
        "('*' any text, '?' one character).")] = None,
    site: Annotated[str | None, typer.Option(help="Only jobs at this site.")] = None,
    project: Annotated[str | None, typer.Option(help="Only jobs of this project.")] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", "-l", help="Only jobs with label k=v (repeatable: all must match).")]
    = None,
    array: Annotated[str | None, typer.Option(
        "--array", metavar="ARRAY", help="Only the tasks of this job array (its id or a "
        "unique start).")] = None,
    origin: Annotated[Origin | None, typer.Option(
        help="Only jobs that came in by this door: api (the API, this CLI, workflows) or "
        "tes (GA4GH TES clients).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="Jobs per page.")] = 50,
    all_pages: Annotated[bool, typer.Option(
        "--all", help="Follow the cursor through every page.")] = False,
    cursor: Annotated[str | None, typer.Option(help="Start at this page cursor.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """List your jobs, newest first.

    REASON: why a job waits (held, Dependency, waiting for a site: ..., or
    the site scheduler's own, such as Priority), or how it ended. TIME: how
    long it has run, or (in parentheses) how long it has waited so far.
    A narrow terminal leaves out PROJECT, EXIT, CREATED, TIME and SITE, in
    that order (--json has everything).
    """
    labels = pairs(label or [], "--label")
    # A glob goes to the API as one; a plain name matches exactly.
    glob = name if name is not None and any(c in name for c in "*?") else None
    exact = name if glob is None else None
    with state(ctx).client() as client:
        array_id = None if array is None else resolve_array_id(client, array)
        if all_pages:
            jobs = list(client.iter_jobs(state=state_filter, site=site, project=project,
                                         labels=labels, page_size=limit,
                                         array_job_id=array_id, name=exact,
                                         name_glob=glob, origin=origin))
            if json_out:
                render.print_json({"items": jobs, "next_cursor": None})
                return
            next_cursor = None
        else:
            page = client.list_jobs(state=state_filter, site=site, project=project,
                                    labels=labels, limit=limit, cursor=cursor,
                                    array_job_id=array_id, name=exact, name_glob=glob,
                                    origin=origin)
            if json_out:
                render.print_json(page)
                return
            jobs, next_cursor = page["items"], page.get("next_cursor")
    console = render.stdout_console()
    if not jobs:
        render.stderr_console().print("No jobs.")
        return
    console.print(render.jobs_table(jobs))
    if next_cursor:
        render.stderr_console().print(
            f"More jobs: --cursor {next_cursor} (or --all for every page).")


def show(ctx: typer.Context, job_id: JobArg, json_out: JsonOpt = False) -> None:
    """Show one job and its attempts."""
    with state(ctx).client() as client:
        job = client.get_job(job_id)
    if json_out:
        render.print_json(job)
        return
    console = render.stdout_console()
    console.print(render.job_details(job))
    attempts = render.attempts_table(job)
    if attempts is not None:
        console.print()
        console.print(attempts)


def events(ctx: typer.Context, job_id: JobArg, json_out: JsonOpt = False) -> None:
    """Show a job's history: every state change, with when, who and why."""
    with state(ctx).client() as client:
        items = client.events(job_id)
    if json_out:
        render.print_json({"items": items})
        return
    render.stdout_console().print(render.events_table(items))


def logs(
    ctx: typer.Context,
    job_id: JobArg,
    stderr: Annotated[bool, typer.Option("--stderr", help="Show stderr, not stdout.")] = False,
    tail: Annotated[int | None, typer.Option(
        "--tail", "-n", min=0, help="Only the last N lines.")] = None,
    follow: Annotated[bool, typer.Option(
        "--follow", "-f", help="Keep printing output until the job ends.")] = False,
) -> None:
    """Print a job's stdout (or stderr), as bytes, exactly as the job wrote it."""
    stream: Stream = "stderr" if stderr else "stdout"
    out: BinaryIO = sys.stdout.buffer
    with state(ctx).client() as client:
        offset = 0
        if tail is not None:
            first = tail_lines(client, job_id, stream, tail)
            out.write(first.data)
            out.flush()
            offset = first.offset + len(first.data)
        elif not follow:
            while True:
                chunk = client.output(job_id, stream, offset=offset)
                out.write(chunk.data)
                offset += len(chunk.data)
                # The API caps one read; keep going until we have all there is.
                if not chunk.data or offset >= chunk.size:
                    break
        if follow:
            with keeps_running(state(ctx), job_id, "following its output"):
                for data in client.follow(job_id, stream, offset=offset):
                    out.write(data)
                    out.flush()
    out.flush()


def wait(
    ctx: typer.Context,
    job_id: JobArg,
    timeout: TimeoutOpt = None,
    interval: Annotated[float, typer.Option(
        min=0.1, help="Seconds between polls (at most).")] = 2.0,
    until: Annotated[Until, typer.Option(
        help="ended: until the job is final; running: until it has started (or ended).",
        case_sensitive=False)] = Until.ENDED,
    json_out: JsonOpt = False,
) -> None:
    """Wait for a job to end (or, with --until running, to start); the exit code mirrors
    the job.

    \b
    0    COMPLETED (--until running: RUNNING, or past it and COMPLETED)
    N    FAILED with exit code N (a job killed by signal k: 128+k)
    1    FAILED without an exit code of its own
    125  CANCELLED
    124  --timeout passed first
    130  interrupted (Ctrl-C): the job keeps running
    """
    cli = state(ctx)
    with cli.client() as client:
        with keeps_running(cli, job_id, "waiting"):
            job = wait_for(client, job_id, timeout=timeout, poll_seconds=interval,
                           quiet=json_out, until=until.states)
        if not json_out:
            show_failure(client, cli, job)
    if json_out:
        render.print_json(job)
    started = job["state"] in STARTED_STATES - FINAL_STATES
    raise typer.Exit(errors.OK if until is Until.RUNNING and started else job_exit_code(job))

