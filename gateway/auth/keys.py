"""The built-in issuer's signing key: RS256, generated once, stored 0600 as PKCS#8 PEM."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey

log = logging.getLogger(__name__)

ALGORITHM = "RS256"
KEY_BITS = 2048


class SigningKeys:
    """One RS256 key pair; `kid` is its RFC 7638 thumbprint, so it never changes."""

    def __init__(self, private_key: RSAKey) -> None:
        if not private_key.is_private:
            raise ValueError("SigningKeys needs a private key")
        self._private = private_key
        self.kid: str = private_key.thumbprint()
        public = private_key.as_dict(private=False)
        public.update({"kid": self.kid, "use": "sig", "alg": ALGORITHM})
        self._public_jwk: dict[str, Any] = dict(public)
        self.public_key: RSAKey = RSAKey.import_key(self._public_jwk)

    @classmethod
    def generate(cls) -> SigningKeys:
        """A fresh key that lives in memory only (tests, throwaway gateways)."""
        return cls(RSAKey.generate_key(KEY_BITS))

    @classmethod
    def load_or_create(cls, path: Path) -> SigningKeys:
        """Load the key at `path`, creating it (mode 0600) on first use."""
        if not path.exists():
            _create_key_file(path)
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            log.warning("signing key %s is readable by others (mode %o); it should be 0600",
                        path, mode)
        return cls(RSAKey.import_key(path.read_bytes()))

    def jwks(self) -> dict[str, Any]:
        """The public JWK Set served at /.well-known/jwks.json."""
        return {"keys": [dict(self._public_jwk)]}

    def sign(self, claims: dict[str, Any], typ: str = "at+jwt") -> str:
        """A compact RS256 JWS over `claims`, with our `kid` and the given `typ`."""
        header = {"alg": ALGORITHM, "kid": self.kid, "typ": typ}
        return jwt.encode(header, claims, self._private, algorithms=[ALGORITHM])


def _create_key_file(path: Path) -> None:
    """Write a new key without ever exposing it: 0600 from birth, published atomically."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    pem = RSAKey.generate_key(KEY_BITS).as_pem(private=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(pem)
            fh.flush()
            os.fsync(fh.fileno())
        # link() refuses to overwrite: if another process won the race, its key stands.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
