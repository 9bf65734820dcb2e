"""How adapters reach a site: run an argv, put and read files. One protocol, two transports.

Scheduler adapters talk to a `Transport` only (`protocol`), so their builders and parsers
are tested on recorded outputs without sockets and the same adapters run live.
`LocalTransport` (`local`) runs argv on this machine without a shell;
`adapters.ssh.SshTransport` runs it on a login host over one pooled SSH connection. `argv`
checks and quotes what is sent; `streams` are the local ends of file copies.

Errors: every failure is an `AdapterError`, drawn as one tree in adapters.errors (and
importable from here). Connection trouble and timeouts are `SiteUnavailable` (transient:
`ConnectionFailed`, `CircuitOpen`, `CommandTimeout`); the rest are final `TransportError`s
(`HostKeyMismatch`, `AuthenticationFailed`, `OutputTooLarge`, `FileTransferError`,
`InvalidCommand`). A command that ran and exited non-zero is not an error: its
`CommandResult` says so.
"""

from adapters.errors import (
    AuthenticationFailed,
    CircuitOpen,
    CommandTimeout,
    ConnectionFailed,
    FileTransferError,
    HostKeyMismatch,
    InvalidCommand,
    OutputTooLarge,
    TransportError,
)
from adapters.transport.argv import check_argv, check_read_range, remote_command, shown
from adapters.transport.local import LocalTransport
from adapters.transport.protocol import (
    DEFAULT_MAX_OUTPUT_BYTES,
    CommandResult,
    FileTransport,
    LocalSink,
    LocalSource,
    PreparesUploads,
    Progress,
    Transport,
)
from adapters.transport.streams import copy_stream, open_sink, open_source

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "AuthenticationFailed",
    "CircuitOpen",
    "CommandResult",
    "CommandTimeout",
    "ConnectionFailed",
    "FileTransferError",
    "FileTransport",
    "HostKeyMismatch",
    "InvalidCommand",
    "LocalSink",
    "LocalSource",
    "LocalTransport",
    "OutputTooLarge",
    "PreparesUploads",
    "Progress",
    "Transport",
    "TransportError",
    "check_argv",
    "check_read_range",
    "copy_stream",
    "open_sink",
    "open_source",
    "remote_command",
    "shown",
]
