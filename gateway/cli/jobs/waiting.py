"""Waiting for a job, turning its outcome into the CLI's exit code, and what to say when
it failed or the wait is interrupted."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from gateway.cli import errors
from gateway.cli.state import CliState
from gateway.client.api import GatewayClient, Stream
from gateway.client.errors import ClientError
from gateway.client.models import FINAL_STATES, Job, Output, is_final

# Lines of stderr shown when a waited-for job FAILED: enough for a traceback's end.
FAILURE_TAIL_LINES = 10


def job_exit_code(job: Job) -> int:
    """The exit code `gridgate wait` returns for a final job.

    COMPLETED -> 0; CANCELLED -> 125; FAILED -> the job's own exit code when it has a
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
    if job.get("reason"):
        text += f": {job['reason']}"
    return text


def wait_for(client: GatewayClient, job_id: str, *, timeout: float | None = None,
             poll_seconds: float = 2.0, quiet: bool = False,
             until: frozenset[str] = FINAL_STATES) -> Job:
    """Poll until the job is in one of `until` (default: final), showing progress on
    stderr.

    On a terminal a spinner shows the current state and why; otherwise each change of
    state or reason (why it waits) is one line, so logs of non-interactive runs stay
    readable and still say why a job waits.
    """
    console = Console(file=sys.stderr, stderr=True, highlight=False, markup=False,
                      soft_wrap=True)
    if quiet:
        return client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds, until=until)
    if console.is_terminal:
        with console.status(f"job {job_id}: waiting") as status:
            def spin(job: Job) -> None:
                status.update(f"job {job_id}: {describe(job)}")

            job = client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds,
                              on_update=spin, until=until)
    else:
        seen: list[str] = []

        def log(job: Job) -> None:
            now = describe(job)
            if not seen or seen[-1] != now:
                seen.append(now)
                if job["state"] not in until:
                    console.print(f"job {job_id}: {now}")

        job = client.wait(job_id, timeout=timeout, poll_seconds=poll_seconds, on_update=log,
                          until=until)
    if job["state"] in until:
        console.print(f"job {job_id}: {describe(job)}")
    else:
        console.print(f"job {job_id}: still {job['state']} after {timeout or 0:g} s")
    return job


def tail_lines(client: GatewayClient, job_id: str, stream: Stream, lines: int) -> Output:
    """The last `lines` lines of a stream (fetching more bytes until there are enough)."""
    want = max(4096, lines * 256)
    cap = 64 * 1024 * 1024
    while True:
        out = client.output(job_id, stream, tail=want)
        chunks = out.data.splitlines(keepends=True)
        # One more line than asked, unless we hold the whole file: the first may be cut.
        if len(chunks) > lines or out.offset == 0 or want >= cap:
            data = b"".join(chunks[-lines:]) if lines else b""
            return Output(data, out.offset + len(out.data) - len(data), out.size)
        want = min(cap, want * 4)


def show_failure(client: GatewayClient, cli: CliState, job: Job,
                 lines: int = FAILURE_TAIL_LINES) -> None:
    """For a FAILED job: the end of its stderr on our stderr, where the cause usually is
    (a missing file, a traceback), and the command that shows all of it."""
    if job["state"] != "FAILED":
        return
    try:
        tail = tail_lines(client, job["id"], "stderr", lines)
    except ClientError:
        return  # no output to show (it never ran): the state reason says why
    text = tail.data.decode("utf-8", errors="replace").rstrip("\n")
    if not text.strip():
        return
    err = Console(file=sys.stderr, stderr=True, highlight=False, markup=False,
                  soft_wrap=True)
    shown = len(text.splitlines())
    whole = "" if tail.offset == 0 else f"last {shown} lines; "
    err.print(f"--- stderr of job {job['id']} ({whole}all of it: "
              f"{cli.command('logs --stderr ' + job['id'])}):")
    err.print(text)
    err.print("---")


@contextmanager
def keeps_running(cli: CliState, job_id: str, doing: str) -> Iterator[None]:
    """Ctrl-C while `doing` (waiting, following) stops this command, not the job: say so,
    and how to pick it up again or cancel it."""
    try:
        yield
    except KeyboardInterrupt:
        raise errors.Interrupted(
            f"Stopped {doing}; job {job_id} keeps running. Follow it with "
            f"'{cli.command('wait ' + job_id)}' or '{cli.command('logs -f ' + job_id)}'; "
            f"cancel it with '{cli.command('cancel ' + job_id)}'.") from None
