"""Short-lived OpenSSH user certificates (PROTOCOL.certkeys), signed by a CA the site trusts
(its sshd's `TrustedUserCAKeys`). Pure: keys in, certificate lines out.

A certificate names one principal (the researcher's account at the site, which the caller
takes from the site's mapping, never from a request), says who and why in its key id (the
site's sshd logs it on every login), is valid for minutes (backdated a little for clocks
that differ), may be used only from the gateway's addresses (`source-address`), and grants
no extension: no pty, no port, agent or X11 forwarding, no ~/.ssh/rc. A new key pair is
made for each certificate, so no user's private key is ever stored.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    SSHCertificate,
    SSHCertificateBuilder,
    SSHCertificateType,
)

from rules.text import UNIX_ACCOUNT, TextRule

# What a certificate is for; the key id says it (gridgate:<user>:<purpose>).
PURPOSE = TextRule("certificate purpose", r"[a-z][a-z-]{0,31}",
                   "1-32 lowercase letters or '-' (e.g. commands, staging, check)")
# Clocks at the site may run behind the gateway's: a certificate starts this long ago.
BACKDATE = timedelta(seconds=60)
DEFAULT_LIFETIME = timedelta(minutes=5)
MAX_LIFETIME = timedelta(hours=24)


class CertificateError(ValueError):
    """A certificate that must not be signed (bad principal, purpose, addresses, lifetime)."""


def source_address(block: str) -> str:
    """`block` if it is an IP address or CIDR block, else CertificateError."""
    try:
        ipaddress.ip_network(block, strict=False)
    except ValueError:
        raise CertificateError(f"{block!r} is not an IP address or CIDR block (e.g. "
                               "192.0.2.10 or 192.0.2.0/24)") from None
    return block


@dataclass(frozen=True)
class CertificatePolicy:
    """The limits every certificate for one site carries."""

    source_addresses: tuple[str, ...]  # the gateway's addresses, as CIDR blocks
    lifetime: timedelta = DEFAULT_LIFETIME

    def __post_init__(self) -> None:
        if not self.source_addresses:
            raise CertificateError("a certificate must be bound to the gateway's addresses "
                                   "(source-address): give at least one")
        for block in self.source_addresses:
            source_address(block)
        if not timedelta(seconds=30) <= self.lifetime <= MAX_LIFETIME:
            raise CertificateError("a certificate's lifetime must be between 30 seconds and "
                                   f"24 hours, not {self.lifetime}")


@dataclass(frozen=True)
class UserCertificate:
    """A fresh key pair and its certificate: what a connection logs in with."""

    private_key: bytes = field(repr=False)  # OpenSSH PEM; in memory only
    certificate: str  # "ssh-ed25519-cert-v01@openssh.com AAAA..."
    principal: str
    key_id: str
    serial: int
    valid_before: datetime


def key_id(gateway_user: str, purpose: str) -> str:
    """`gridgate:<user>:<purpose>`; the username percent-encoded where it has more than
    letters, digits and `._@+-` (sshd writes the key id into its log as it is)."""
    if problem := PURPOSE.problem(purpose):
        raise CertificateError(problem)
    if not gateway_user:
        raise CertificateError("a certificate names the gateway user it is for")
    return f"gridgate:{quote(gateway_user, safe='@+.-_')}:{purpose}"


def issue(ca: Ed25519PrivateKey, principal: str, ident: str, policy: CertificatePolicy,
          now: datetime) -> UserCertificate:
    """A new ed25519 key pair and a certificate for it, signed by `ca`, valid for
    `principal` only, from `now - BACKDATE` to `now + policy.lifetime`."""
    if problem := UNIX_ACCOUNT.problem(principal):
        raise CertificateError(problem)
    if now.tzinfo is None:
        raise CertificateError("`now` must carry its time zone")
    user_key = Ed25519PrivateKey.generate()
    serial = secrets.randbits(63)  # random: no counter to share between gateway hosts
    valid_before = now + policy.lifetime
    builder = (SSHCertificateBuilder()
               .public_key(user_key.public_key())
               .serial(serial)
               .type(SSHCertificateType.USER)
               .key_id(ident.encode())
               .valid_principals([principal.encode()])
               .valid_after(int((now - BACKDATE).timestamp()))
               .valid_before(int(valid_before.timestamp()))
               .add_critical_option(b"source-address",
                                    ",".join(policy.source_addresses).encode()))
    # No add_extension: without permit-pty, -port-forwarding, -agent-forwarding,
    # -X11-forwarding and -user-rc the certificate allows none of them.
    certificate = builder.sign(ca)
    pem = user_key.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.OpenSSH,
                                 serialization.NoEncryption())
    return UserCertificate(private_key=pem, certificate=certificate.public_bytes().decode(),
                           principal=principal, key_id=ident, serial=serial,
                           valid_before=valid_before)


@dataclass(frozen=True)
class CertificateFacts:
    """What a certificate says, read back (for `site check` and tests)."""

    principals: tuple[str, ...]
    key_id: str
    serial: int
    valid_after: datetime
    valid_before: datetime
    critical_options: dict[str, str]
    extensions: tuple[str, ...]
    signed_by: str  # the CA's public key line


def read(line: str) -> CertificateFacts:
    """The facts of an OpenSSH user certificate line; ValueError if it is not one."""
    cert = serialization.load_ssh_public_identity(line.encode())
    if not isinstance(cert, SSHCertificate):
        raise ValueError("a plain public key, not a certificate")
    signer = cert.signature_key().public_bytes(serialization.Encoding.OpenSSH,
                                               serialization.PublicFormat.OpenSSH)
    return CertificateFacts(
        principals=tuple(p.decode() for p in cert.valid_principals),
        key_id=cert.key_id.decode(), serial=cert.serial,
        valid_after=datetime.fromtimestamp(cert.valid_after, UTC),
        valid_before=datetime.fromtimestamp(cert.valid_before, UTC),
        critical_options={k.decode(): v.decode() for k, v in cert.critical_options.items()},
        extensions=tuple(sorted(k.decode() for k in cert.extensions)),
        signed_by=signer.decode())


def fingerprint(line: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line (as sshd logs and ssh-keygen -l
    show it: `SHA256:` and unpadded base64)."""
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def public_line(ca: Ed25519PrivateKey, comment: str = "") -> str:
    """The CA's public key as a `TrustedUserCAKeys` line."""
    line = ca.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                        serialization.PublicFormat.OpenSSH).decode()
    return f"{line} {comment}".rstrip()
