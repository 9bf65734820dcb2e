"""Pinned SSH host keys: parse the site config's lines, compare, fingerprint like OpenSSH."""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class HostKey:
    """One public host key: its type name and its wire blob."""

    key_type: str
    blob: bytes

    @classmethod
    def parse(cls, line: str) -> HostKey:
        """From `"<type> <base64> [comment]"`, the format of a `.pub` file or `ssh-keyscan`."""
        fields = line.split()
        if len(fields) < 2:
            raise ValueError(
                f"host key {line[:40]!r} is not '<type> <base64> [comment]' "
                "(e.g. the contents of /etc/ssh/ssh_host_ed25519_key.pub)"
            )
        key_type, encoded = fields[0], fields[1]
        try:
            blob = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"host key of type {key_type}: the key is not valid base64") from None
        if _blob_type(blob) != key_type:
            raise ValueError(
                f"host key says {key_type!r} but its data is of type {_blob_type(blob)!r}"
            )
        return cls(key_type, blob)

    @property
    def fingerprint(self) -> str:
        """`SHA256:<base64>`, exactly as `ssh-keygen -l` prints it."""
        return fingerprint(self.blob)

    def describe(self) -> str:
        return f"{self.key_type} {self.fingerprint}"

    def line(self) -> str:
        return f"{self.key_type} {base64.b64encode(self.blob).decode('ascii')}"


def fingerprint(blob: bytes) -> str:
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


def _blob_type(blob: bytes) -> str | None:
    """The type name a key blob starts with (SSH string: uint32 length, then bytes)."""
    if len(blob) < 4:
        return None
    (length,) = struct.unpack(">I", blob[:4])
    name = blob[4 : 4 + length]
    if len(name) != length:
        return None
    try:
        return name.decode("ascii")
    except UnicodeDecodeError:
        return None


def parse_pins(lines: tuple[str, ...] | list[str]) -> tuple[HostKey, ...]:
    """Every pinned key; at least one is required (there is no trust on first use)."""
    keys = tuple(HostKey.parse(line) for line in lines if line.strip())
    if not keys:
        raise ValueError("at least one pinned host key is required (no trust on first use)")
    return keys
