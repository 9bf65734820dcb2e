"""A containerised program's standard streams from and to files inside the container
(GA4GH TES's executor `stdin`, `stdout` and `stderr`; pure).

A runtime has no option for it, so the program runs under the image's `/bin/sh`, whose
script is one of eight fixed texts (which streams are redirected) and whose paths and
program words are its positional parameters: nothing of the user's is ever part of a
script. An image without `/bin/sh` cannot take redirects (the job fails with 127, as a
shell would say). One process only: the ranks of an MPI job would write over each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from containers.binds import check_absolute

_NAME = "gridgate-redirect"  # $0 of the shell, in its error messages


@dataclass(frozen=True)
class Redirects:
    """Files inside the container for the program's standard streams (None: the job's)."""

    stdin: str | None = None
    stdout: str | None = None
    stderr: str | None = None

    def __post_init__(self) -> None:
        for what, path in (("stdin", self.stdin), ("stdout", self.stdout),
                           ("stderr", self.stderr)):
            if path is not None:
                check_absolute(path, f"the {what} file")

    def __bool__(self) -> bool:
        return any(p is not None for p in (self.stdin, self.stdout, self.stderr))

    def wrap(self, command: tuple[str, ...]) -> tuple[str, ...]:
        """`command` with the streams redirected (as it is when none are)."""
        if not self:
            return command
        script = 'i=$1 o=$2 e=$3; shift 3; exec "$@"'
        script += ' <"$i"' if self.stdin is not None else ""
        script += ' >"$o"' if self.stdout is not None else ""
        script += ' 2>"$e"' if self.stderr is not None else ""
        return ("/bin/sh", "-c", script, _NAME, self.stdin or "", self.stdout or "",
                self.stderr or "", *command)
