"""Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is
`whsec_` + base64 of random bytes; `webhook-signature` is `v1,` + base64 of the
HMAC-SHA256, keyed with those bytes, of `{webhook-id}.{webhook-timestamp}.{body}`."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh signing secret (shown to its owner once)."""
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers that sign one delivery."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": f"v1,{digest}"}
