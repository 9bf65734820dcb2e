"""The gateway's SSH certificate authority: the keys it signs researchers' short-lived
certificates with (adapters.ssh.certificates), kept like the token signing key (in the
data directory, 0600 from birth, never readable by local jobs), rotated with an overlap.

Keys are generations in `<data dir>/ssh-ca/`: `ca-<n>.pem` and `keys.json`, which says
from when each key signs and until when it is listed. A rotation adds the next key at once
(sites add it to `TrustedUserCAKeys`: `gridgate admin ssh-ca show` lists every key sites
should trust) and lets it sign only after the overlap; the key it replaces stays listed
one certificate lifetime longer, so nothing it signed is refused before it expires.
Several gateway hosts share the directory (it is in the data dir); a file lock keeps two
rotations from interleaving.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from adapters.ssh.certificates import MAX_LIFETIME, fingerprint, public_line

STATE = "keys.json"
# Every certificate a retired key signed has expired by then.
RETIRE_AFTER = MAX_LIFETIME


@dataclass(frozen=True)
class CaKey:
    """One generation of the CA key: when it signs, until when sites should list it."""

    generation: int
    created: datetime
    signs_from: datetime
    listed_until: datetime | None = None  # None: until a later key replaces it

    @property
    def file(self) -> str:
        return f"ca-{self.generation}.pem"

    def listed(self, now: datetime) -> bool:
        return self.listed_until is None or now < self.listed_until


@dataclass(frozen=True)
class TrustedKey:
    """A CA key as sites see it."""

    generation: int
    state: str  # signing, next (signs from signs_from), retiring (listed until)
    fingerprint: str
    line: str  # for TrustedUserCAKeys
    signs_from: datetime
    listed_until: datetime | None


class SshCa:
    """The CA keys in one directory (see module)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        # What was read, while the state file stays the same (another process may rotate:
        # a new state file is a new inode); a key file never changes once written.
        self._read: tuple[tuple[int, int], list[CaKey]] | None = None
        self._loaded: dict[int, Ed25519PrivateKey] = {}

    def signer(self, now: datetime) -> tuple[CaKey, Ed25519PrivateKey]:
        """The key that signs now (the first one is made on first use)."""
        keys = self._keys()
        if not keys:
            with self._locked():
                keys = self._keys() or [self._add(1, now, now, [])]
        key = max((k for k in keys if k.signs_from <= now and k.listed(now)),
                  key=lambda k: k.generation)
        return key, self._private(key)

    def trusted(self, now: datetime) -> list[TrustedKey]:
        """Every key sites should trust now, oldest first."""
        self.signer(now)  # the first key exists
        keys = [k for k in self._keys() if k.listed(now)]
        signing = max((k for k in keys if k.signs_from <= now), key=lambda k: k.generation)
        out = []
        for key in keys:
            line = public_line(self._private(key), f"gridgate-ca-{key.generation}")
            state = ("signing" if key is signing else "next" if key.signs_from > now
                     else "retiring")
            out.append(TrustedKey(key.generation, state, fingerprint(line), line,
                                  key.signs_from, key.listed_until))
        return out

    def rotate(self, now: datetime, overlap: timedelta) -> CaKey:
        """Add the next key, signing after `overlap`; the keys it replaces are listed until
        RETIRE_AFTER past then. The new key."""
        if overlap < timedelta(0):
            raise ValueError("the overlap cannot be negative")
        self.signer(now)
        with self._locked():
            keys = self._keys()
            if any(k.signs_from > now for k in keys):
                raise ValueError("a rotation is already under way: its key signs from "
                                 f"{max(k.signs_from for k in keys).isoformat()}")
            switch = now + overlap
            kept = [k if k.listed_until is not None
                    else CaKey(k.generation, k.created, k.signs_from, switch + RETIRE_AFTER)
                    for k in keys]
            return self._add(max(k.generation for k in keys) + 1, now, switch, kept)

    def revocation_list(self, now: datetime, key_ids: Sequence[str]) -> bytes:
        """A key revocation list (OpenSSH's KRL, made by `ssh-keygen -k`) revoking every
        certificate with one of `key_ids` signed by any key sites trust now: for a site's
        `RevokedKeys`, so that a certificate still valid is refused once its user is."""
        with tempfile.TemporaryDirectory(prefix="gridgate-krl-") as tmp:
            spec = Path(tmp) / "revoked"
            spec.write_text("".join(f"id: {ident}\n" for ident in key_ids))
            out = Path(tmp) / "krl"
            for n, key in enumerate(self.trusted(now)):
                ca = Path(tmp) / f"ca-{n}.pub"
                ca.write_text(key.line + "\n")
                # The first key makes the list, the others add a section each (-u).
                subprocess.run(["ssh-keygen", "-q", "-k", *(["-u"] if n else []),
                                "-f", str(out), "-s", str(ca), str(spec)],
                               check=True, capture_output=True, stdin=subprocess.DEVNULL)
            return out.read_bytes()

    # --- files ---------------------------------------------------------------------------

    def _keys(self) -> list[CaKey]:
        try:
            with open(self.dir / STATE, "rb") as fh:
                seen = os.fstat(fh.fileno())
                stamp = (seen.st_ino, seen.st_mtime_ns)
                if self._read is not None and self._read[0] == stamp:
                    return self._read[1]
                data = json.loads(fh.read())
        except FileNotFoundError:
            return []
        keys = [CaKey(k["generation"], datetime.fromisoformat(k["created"]),
                      datetime.fromisoformat(k["signs_from"]),
                      None if k["listed_until"] is None
                      else datetime.fromisoformat(k["listed_until"])) for k in data["keys"]]
        self._read = (stamp, keys)
        return keys

    def _private(self, key: CaKey) -> Ed25519PrivateKey:
        if key.generation not in self._loaded:
            loaded = serialization.load_ssh_private_key((self.dir / key.file).read_bytes(),
                                                        None)
            if not isinstance(loaded, Ed25519PrivateKey):
                raise ValueError(f"{self.dir / key.file} is not an ed25519 key")
            self._loaded[key.generation] = loaded
        return self._loaded[key.generation]

    def _add(self, generation: int, now: datetime, signs_from: datetime,
             kept: list[CaKey]) -> CaKey:
        """Write the new key's file, then the state naming it (the lock is held)."""
        key = CaKey(generation, now, signs_from)
        pem = Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption())
        _write_new(self.dir / key.file, pem)
        state = {"keys": [_json(k) for k in [*kept, key]]}
        tmp = self.dir / f".{STATE}.{secrets.token_hex(8)}"
        _write_new(tmp, json.dumps(state, indent=2).encode())
        os.replace(tmp, self.dir / STATE)
        return key

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _json(key: CaKey) -> dict[str, object]:
    return {name: value.isoformat() if isinstance(value, datetime) else value
            for name, value in asdict(key).items()}


def _write_new(path: Path, data: bytes) -> None:
    """Write `path`, readable by its owner only from birth; it must not exist yet."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
