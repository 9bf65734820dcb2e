"""Where and as whom to log in over SSH: plain data, built by the caller from a site config."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from adapters.ssh.certificates import UserCertificate
from adapters.ssh.hostkeys import HostKey, parse_pins
from adapters.transport import DEFAULT_MAX_OUTPUT_BYTES


@dataclass(frozen=True)
class SshTarget:
    """One account on one login host.

    `host_keys` are the pinned public host keys ("ssh-ed25519 AAAA..." lines); a server
    showing any other key is refused before we authenticate. The private key comes from
    `key_path` (a file, e.g. a mounted secret) or `key_data` (its bytes); neither the bytes
    nor the passphrase appear in repr() or in any message. `jump` is an optional bastion
    reached first (like OpenSSH's ProxyJump). `site` names the site in messages and keys
    its circuit breaker; it defaults to user@host:port.

    `credentials`, in place of a key, signs a short-lived certificate with a key pair of
    its own for each new connection (adapters.ssh.certificates: the site's sshd trusts
    the CA, not the key); a connection takes no new commands from `renew_before` seconds
    before its certificate expires, and closes once its last command has ended.
    """

    host: str
    user: str
    host_keys: tuple[str, ...]
    port: int = 22
    key_path: str | None = None
    key_data: bytes | None = field(default=None, repr=False)
    key_passphrase: str | None = field(default=None, repr=False)
    credentials: Callable[[], UserCertificate] | None = field(default=None, compare=False)
    renew_before: float = 60.0
    jump: SshTarget | None = None
    site: str | None = None
    connect_timeout: float = 10.0
    keepalive_seconds: float = 15.0
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    # Concurrent channels on the one connection; sshd's MaxSessions defaults to 10.
    max_sessions: int = 8
    # Parallel OpenSSH streams for large uploads (adapters.ssh.openssh.bulk); 0: paramiko only.
    bulk_streams: int = 2

    def __post_init__(self) -> None:
        if isinstance(self.host_keys, str):
            raise ValueError("host_keys is a sequence of key lines, not one string")
        object.__setattr__(self, "host_keys", tuple(self.host_keys))
        parse_pins(self.host_keys)
        given = [self.key_path, self.key_data, self.credentials]
        if sum(x is not None for x in given) != 1:
            raise ValueError(f"{self.label}: give exactly one of key_path, key_data and "
                             "credentials")
        if not 0 < self.port < 65536:
            raise ValueError(f"{self.label}: port {self.port} is out of range")
        if not self.host or not self.user:
            raise ValueError("host and user are required")
        if self.bulk_streams < 0:
            raise ValueError(f"{self.label}: bulk_streams must be >= 0")
        if self.connect_timeout <= 0 or self.max_output_bytes <= 0 or self.max_sessions <= 0:
            raise ValueError(
                f"{self.label}: connect_timeout, max_output_bytes, max_sessions must be > 0"
            )

    @property
    def label(self) -> str:
        """How messages name this target: the site, else user@host:port."""
        return self.site or f"{self.user}@{self.host}:{self.port}"

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def pool_key(self) -> tuple[str, int, str]:
        """Connections are shared per (host, port, user)."""
        return (self.host, self.port, self.user)

    @property
    def pinned_keys(self) -> tuple[HostKey, ...]:
        return parse_pins(self.host_keys)
