"""Waiting for a job, and turning its outcome into the CLI's exit code."""

from __future__ import annotations

import sys

from rich.console import Console

from gateway.cli import errors
from gateway.client.api import GatewayClient
from gateway.client.models import Job, is_final


def job_exit_code(job: Job) -> int:
    """The exit code `gridgate wait` returns for a final job.

    COMPLETED -> 0; CANCELLED -> 130; FAILED -> the job's own exit code when it has a
    non-zero one that fits in 1-255 (a negative code -k, "killed by signal k", becomes
    128+k as a shell reports it), else 1. A job that is not final -> 124 (timed out).
    """
    state = job["state"]
    if state == "COMPLETED":
        return errors.OK
    if state == "CANCELLED":
        return errors.CANCELLED
    if state != "FAILED":
        return errors.TIMEOUT
    code = job.get("exit_code")
    if code is None or code == 0:
        return errors.FAILURE
    if code < 0:
        return min(128 + -code, 255)
    return code if code <= 255 else errors.FAILURE


def describe(job: Job) -> str:
    """One line on where a job stands, e.g. 'FAILED (exit 3): NonZeroExitCode'."""
    text = job["state"]
    if job.get("exit_code") is not None and is_final(job):
        text += f" (exit {job['exit_code']})"
    if job.get("state_reason"):
        text += f": {job['state_reason']}"
    return text


def wait_for(client: GatewayClient, job_id: str, *, timeout: float | None = None,
             poll_seconds: float = 2.0, quiet: bool = False) -> Job:
    """Poll until the job is final, showing progress on stderr.

    On a terminal a spinner shows the current state; otherwise each state change is
    one line, so logs of non-interactive runs stay readable.
    """
    console = Console(file=sys.stderr, stderr=True, highlight=False, markup=False,
                      soft_wrap=True)
    if quiet:
        return client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds)
    if console.is_terminal:
        with console.status(f"job {job_id}: waiting") as status:
            def spin(job: Job) -> None:
                status.update(f"job {job_id}: {describe(job)}")

            job = client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds,
                              on_update=spin)
    else:
        seen: list[str] = []

        def log(job: Job) -> None:
            if not seen or seen[-1] != job["state"]:
                seen.append(job["state"])
                if not is_final(job):
                    console.print(f"job {job_id}: {job['state']}")

        job = client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds, on_update=log)
    if is_final(job):
        console.print(f"job {job_id}: {describe(job)}")
    else:
        console.print(f"job {job_id}: still {job['state']} after {timeout or 0:g} s")
    return job
