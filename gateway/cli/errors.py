"""Exit codes, and the one place where errors become a plain line on stderr.

Exit codes (stable; scripts may rely on them):

    0    success (for `wait`/`submit --wait`: the job COMPLETED)
    1    failure: a FAILED job without an exit code of its own, or a local error
    2    usage error (bad option or argument)
    3    the gateway is unreachable
    4    not logged in, or the session expired
    5    the gateway refused the request (a problem: its detail is printed)
    6    not found (no such job, or not yours)
    124  `wait --timeout` ran out before the job ended
    125  the job was CANCELLED
    130  the command was interrupted (Ctrl-C); the job, if any, keeps running
    N    `wait`: a FAILED job's own exit code N (1-255; a signal k gives 128+k)
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from gateway.client.errors import (
    AuthenticationRequired,
    ClientError,
    GatewayUnreachable,
    NotFoundError,
    ProblemError,
)
from gateway.domain.errors import GatewayError, NotFound

OK = 0
FAILURE = 1
USAGE = 2
UNREACHABLE = 3
AUTH = 4
PROBLEM = 5
NOT_FOUND = 6
TIMEOUT = 124
CANCELLED = 125
# 128 + SIGINT, as a shell reports a command stopped by Ctrl-C.
INTERRUPTED = 130



class _Stderr:
    """A rich console on stderr, made on first use: `gridgate --version` needs no rich."""

    def print(self, message: str) -> None:
        from gateway.cli.render import stderr_console

        # Markup off (render's consoles): server text is printed as-is, never interpreted.
        stderr_console().print(message)


_stderr = _Stderr()


class Interrupted(Exception):
    """Ctrl-C stopped the command; `message` says what goes on and what to run next."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def fail(message: str, code: int = FAILURE) -> typer.Exit:
    """Print `message` on stderr and return the Exit to raise."""
    _stderr.print(message)
    return typer.Exit(code)


def exit_code(exc: Exception) -> int:
    """The exit code for `exc` (what `report` returns), without printing anything."""
    if isinstance(exc, GatewayUnreachable):
        return UNREACHABLE
    if isinstance(exc, AuthenticationRequired):
        return AUTH
    if isinstance(exc, ProblemError):
        return NOT_FOUND if isinstance(exc, NotFoundError) else PROBLEM
    if isinstance(exc, GatewayError):
        return NOT_FOUND if isinstance(exc, NotFound) else PROBLEM
    return FAILURE


def report(exc: Exception) -> int:
    """Print one plain line (plus per-field errors) for `exc`; return its exit code."""
    if isinstance(exc, GatewayUnreachable):
        _stderr.print(f"error: {exc.message}")
        return UNREACHABLE
    if isinstance(exc, AuthenticationRequired):
        _stderr.print(f"error: {exc.message}")
        return AUTH
    if isinstance(exc, ProblemError):
        if not exc.errors:
            _stderr.print(f"error: {exc.detail or exc.title}")
            return exit_code(exc)
        # The detail repeats the errors in one line: print each problem once, one a line.
        count = len(exc.errors)
        _stderr.print(f"error: {exc.title} ({count} problem{'s' if count > 1 else ''}):")
        for err in exc.errors:
            _stderr.print(f"  {err.field}: {err.message}")
        return exit_code(exc)
    if isinstance(exc, ClientError):
        _stderr.print(f"error: {exc.message}")
        return FAILURE
    if isinstance(exc, GatewayError):
        # Raised by the services that the admin commands call directly.
        _stderr.print(f"error: {exc.detail}")
        return NOT_FOUND if isinstance(exc, NotFound) else PROBLEM
    _stderr.print(f"error: {exc}")
    return FAILURE


class GatewayGroup(TyperGroup):
    """The root command group: turns known errors into a message and an exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (ClientError, GatewayError) as exc:
            raise typer.Exit(report(exc)) from None
        except Interrupted as exc:
            _stderr.print(exc.message)
            raise typer.Exit(INTERRUPTED) from None
        except KeyboardInterrupt:
            _stderr.print("interrupted")
            raise typer.Exit(INTERRUPTED) from None
        except BrokenPipeError:
            # `gridgate logs JOB | head`: the reader left; that is not an error.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(OK) from None
