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
from rich.console import Console
from typer.core import TyperGroup

from gateway.cli.state import accept_gateway_everywhere
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

# Markup off: server text (a problem's detail) must be printed as-is, never interpreted.
_stderr = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)


class Interrupted(Exception):
    """Ctrl-C stopped the command; `message` says what goes on and what to run next."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def fail(message: str, code: int = FAILURE) -> typer.Exit:
    """Print `message` on stderr and return the Exit to raise."""
    _stderr.print(message)
    return typer.Exit(code)


def report(exc: Exception) -> int:
    """Print one plain line (plus per-field errors) for `exc`; return its exit code."""
    if isinstance(exc, GatewayUnreachable):
        _stderr.print(f"error: {exc.message}")
        return UNREACHABLE
    if isinstance(exc, AuthenticationRequired):
        _stderr.print(f"error: {exc.message}")
        return AUTH
    if isinstance(exc, ProblemError):
        _stderr.print(f"error: {exc.detail or exc.title}")
        for err in exc.errors:
            _stderr.print(f"  {err.field}: {err.message}")
        return NOT_FOUND if isinstance(exc, NotFoundError) else PROBLEM
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
    """The root command group: turns known errors into a message and an exit code, and
    takes `--gateway URL` after any command's name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        accept_gateway_everywhere(self)

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
