"""Sites over SSH: pinned host keys, key auth, one pooled connection per account.

`SshTarget` (plain data) says where and as whom; `SshTransport` is the `Transport`
(its parts: `connection`, `channels`, `sftp`, `openssh.bulk`; see adapters.ssh.transport);
`SshTransportPool` shares transports per (host, port, user) and breakers per site.
Only this package imports paramiko.
"""

from adapters.ssh.breaker import Backoff, BreakerState, CircuitBreaker
from adapters.ssh.hostkeys import HostKey
from adapters.ssh.target import SshTarget
from adapters.ssh.transport import SshTransport, SshTransportPool

__all__ = [
    "Backoff",
    "BreakerState",
    "CircuitBreaker",
    "HostKey",
    "SshTarget",
    "SshTransport",
    "SshTransportPool",
]
