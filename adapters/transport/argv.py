"""What a transport may send: argv checks, the quoted remote command, short command lines."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from adapters.errors import InvalidCommand

# Error messages show at most this much of a command line.
_SHOWN_COMMAND_CHARS = 200


def check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """The argv as a tuple, or InvalidCommand if it cannot be passed on faithfully."""
    if isinstance(argv, str | bytes):
        raise InvalidCommand("argv must be a sequence of strings, not one string")
    items = tuple(argv)
    if not items:
        raise InvalidCommand("argv is empty")
    for item in items:
        if not isinstance(item, str):
            raise InvalidCommand(f"argv element {item!r} is not a string")
        if "\0" in item:
            raise InvalidCommand("argv elements cannot contain NUL bytes")
    return items


def remote_command(argv: Sequence[str]) -> str:
    """The one string a remote POSIX shell receives: every element `shlex.quote`d."""
    return " ".join(shlex.quote(item) for item in check_argv(argv))


def shown(argv: Sequence[str]) -> str:
    """A command line for error messages, shortened."""
    text = " ".join(shlex.quote(item) for item in argv)
    if len(text) > _SHOWN_COMMAND_CHARS:
        return text[: _SHOWN_COMMAND_CHARS - 3] + "..."
    return text


def check_read_range(offset: int, limit: int) -> None:
    """ValueError unless both are >= 0."""
    if offset < 0 or limit < 0:
        raise ValueError(f"offset and limit must be >= 0 (got {offset}, {limit})")
