"""Acting on many jobs at once, as Slurm's scancel/scontrol do: `gridgate cancel`, `hold`
and `release` take job ids (or unique starts of them, or ARRAY_INDEX for a task of a job
array), or select your jobs by --name, --state or --all-mine, after a confirmation (--yes
skips it); `cancel` also takes job arrays (all their unfinished tasks, in one request
each). Each job or array gets its own result: a table for people, `--json` for scripts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from gateway.cli import errors, render
from gateway.cli.jobs import ids as job_ids
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.client.api import GatewayClient
from gateway.client.errors import ClientError
from gateway.client.models import FINAL_STATES, Job

JobsArg = Annotated[list[str] | None, typer.Argument(
    metavar="JOB", help="Job ids, or unique starts of them.",
    callback=job_ids.resolve_many, show_default=False)]
TargetsArg = Annotated[list[str] | None, typer.Argument(
    metavar="JOB", help="Job ids, unique starts of them, ARRAY_INDEX for one task of a job "
    "array, or a job array's id (all its tasks).", show_default=False)]
ArrayOpt = Annotated[list[str] | None, typer.Option(
    "--array", metavar="ARRAY", help="Cancel every unfinished task of this job array (its "
    "id or a unique start; repeatable).", show_default=False)]
NameOpt = Annotated[str | None, typer.Option(
    "--name", help="Select your jobs of this exact name.")]
StateOpt = Annotated[str | None, typer.Option(
    "--state", help="Select your jobs in these states (e.g. QUEUED, or Slurm's PD; "
                    "comma-separated; `gridgate list --help` has every name).")]
AllMineOpt = Annotated[bool, typer.Option(
    "--all-mine", help="Select all your jobs that have not ended.")]
YesOpt = Annotated[bool, typer.Option(
    "--yes", "-y", help="Do not ask before acting on selected jobs.")]


@dataclass(frozen=True)
class Verb:
    """One action on a job: its words and the client call that does it."""

    name: str  # "cancel"
    done: str  # "Cancel requested"
    call: Callable[[GatewayClient, str], Job]


CANCEL = Verb("cancel", "Cancel requested", GatewayClient.cancel)
HOLD = Verb("hold", "Held", GatewayClient.hold)
RELEASE = Verb("release", "Released", GatewayClient.release)


def _selected(client: GatewayClient, name: str | None, state_filter: str | None) -> list[Job]:
    # Only your own jobs (`mine`), whatever your role: a bulk action never reaches
    # another user's job. Ended jobs have nothing left to act on.
    return [job for job in client.iter_jobs(name=name, state=state_filter, mine=True)
            if job["state"] not in FINAL_STATES]


def _confirm(verb: Verb, jobs: Sequence[Job]) -> None:
    render.stderr_console().print(render.jobs_table(jobs))
    if not typer.confirm(f"{verb.name.capitalize()} these {len(jobs)} job(s)?", default=False,
                         err=True):
        raise errors.fail(f"Nothing done (no job was {verb.name}ed).", errors.FAILURE)


def _result(verb: Verb, job_id: str, job: Job | None, error: ClientError | None,
            ok: bool = False) -> dict[str, Any]:
    if error is None:
        assert job is not None or ok
        return {"id": job_id, "ok": True, "job": job, "error": None}
    problem = getattr(error, "problem", None) or {"detail": error.message}
    return {"id": job_id, "ok": False, "job": None, "error": problem,
            "exit_code": errors.exit_code(error)}


def act(ctx: typer.Context, verb: Verb, given: list[str], name: str | None,
        state_filter: str | None, all_mine: bool, yes: bool, json_out: bool,
        arrays: Sequence[str] = ()) -> None:
    """Apply `verb` to the given jobs (and, to cancel, job arrays), or to the selected
    ones after a confirmation."""
    selecting = name is not None or state_filter is not None or all_mine
    if (given or arrays) and selecting:
        raise errors.fail(f"error: give job ids, or select jobs with --name/--state/"
                          f"--all-mine, not both (gridgate {verb.name} --help).", errors.USAGE)
    if not given and not arrays and not selecting:
        raise errors.fail(f"error: name the jobs to {verb.name} (JOB...), or select them "
                          f"with --name, --state or --all-mine.", errors.USAGE)
    with state(ctx).client() as client:
        if len(given) == 1 and not arrays:
            job = verb.call(client, given[0])  # one job: its document, errors as usual
            _print_one(verb, job, json_out)
            return
        ids = given or ([] if arrays else _chosen(client, verb, name, state_filter, yes))
        results = []
        for job_id in ids:
            try:
                results.append(_result(verb, job_id, verb.call(client, job_id), None))
            except ClientError as exc:
                results.append(_result(verb, job_id, None, exc))
        for array_id in arrays:
            try:
                results.append({**_result(verb, array_id, None, None, ok=True),
                                "array": client.cancel_job_array(array_id)})
            except ClientError as exc:
                results.append(_result(verb, array_id, None, exc))
    if json_out:
        render.print_json({"items": results})
    else:
        render.stdout_console().print(render.results_table(verb.done, results))
    failed = [r["exit_code"] for r in results if not r["ok"]]
    if failed:
        raise typer.Exit(failed[0])


def _chosen(client: GatewayClient, verb: Verb, name: str | None, state_filter: str | None,
            yes: bool) -> list[str]:
    jobs = _selected(client, name, state_filter.upper() if state_filter else None)
    if not jobs:
        raise errors.fail(f"No job of yours matches; nothing to {verb.name}.", errors.OK)
    if not yes:
        _confirm(verb, jobs)
    return [job["id"] for job in jobs]


def _print_one(verb: Verb, job: Job, json_out: bool) -> None:
    if json_out:
        render.print_json(job)
        return
    render.stderr_console().print(f"{verb.done}: job {job['id']} (now {job['state']}).")


def cancel(ctx: typer.Context, targets: TargetsArg = None, arrays: ArrayOpt = None,
           name: NameOpt = None, state_filter: StateOpt = None, all_mine: AllMineOpt = False,
           yes: YesOpt = False, json_out: JsonOpt = False) -> None:
    """Cancel jobs (each ends CANCELLED once its site confirms).

    \b
      gridgate cancel d3eca39f 5df422bf
      gridgate cancel 7c41e2aa_3              (one task of a job array)
      gridgate cancel --array 7c41e2aa        (every unfinished task; or: cancel 7c41e2aa)
      gridgate cancel --name sweep            (asks first; --yes does not)
      gridgate cancel --state QUEUED --all-mine
    One JOB with --json prints that job; otherwise one result per job or array.
    """
    given, array_ids = job_ids.resolve_targets(ctx, targets or [], arrays or [])
    act(ctx, CANCEL, given, name, state_filter, all_mine, yes, json_out, array_ids)


def hold(ctx: typer.Context, job_ids_: JobsArg = None, name: NameOpt = None,
         state_filter: StateOpt = None, all_mine: AllMineOpt = False, yes: YesOpt = False,
         json_out: JsonOpt = False) -> None:
    """Hold jobs that are still ACCEPTED: no worker routes or submits them until you
    release them. A job already at its site cannot be held (cancel it instead)."""
    act(ctx, HOLD, job_ids_ or [], name, state_filter, all_mine, yes, json_out)


def release(ctx: typer.Context, job_ids_: JobsArg = None, name: NameOpt = None,
            state_filter: StateOpt = None, all_mine: AllMineOpt = False, yes: YesOpt = False,
            json_out: JsonOpt = False) -> None:
    """Release held jobs: the worker routes and submits them as usual."""
    act(ctx, RELEASE, job_ids_ or [], name, state_filter, all_mine, yes, json_out)
