"""Device codes (RFC 8628) as people see them: user codes, and the approval a person
gives on the verification page. The polling client picks the answer up at the token
endpoint (gateway.auth.grants)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from gateway.db.models import DeviceCode, User
from gateway.repositories.identity import device_codes

# RFC 8628 §6.1: 20 consonants, 8 characters: 20^8 ≈ 2.6e10 codes, ~34.5 bits.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
USER_CODE_LENGTH = 8


def device_code_hash(device_code: str) -> str:
    """The hex sha256 under which a device code is stored (never the code itself)."""
    return hashlib.sha256(device_code.encode()).hexdigest()


def new_user_code() -> str:
    """A user code such as `WDJB-MJHT` (RFC 8628 §6.1)."""
    chars = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
    return f"{chars[:4]}-{chars[4:]}"


def normalize_user_code(text: str) -> str | None:
    """What a person typed -> the stored form (case, spaces and dashes forgiven)."""
    chars = "".join(c for c in text.upper() if c.isalnum())
    if len(chars) != USER_CODE_LENGTH or any(c not in USER_CODE_ALPHABET for c in chars):
        return None
    return f"{chars[:4]}-{chars[4:]}"


class DeviceApprovalError(Exception):
    """Why a verification-page submission could not be accepted (a sentence for people)."""


def pending_device_code(session: Session, user_code: str) -> DeviceCode:
    """The live, pending authorization for a typed user code, or DeviceApprovalError."""
    code = normalize_user_code(user_code)
    row = None
    if code is not None:
        row = device_codes.by_user_code(session, code)
    if row is None or row.status != "pending":
        raise DeviceApprovalError("That code is not valid. Check it against the one your "
                                  "terminal shows, or start the login again.")
    if row.expires_at <= datetime.now(UTC):
        raise DeviceApprovalError("That code has expired. Start the login again.")
    return row


def decide_device_code(row: DeviceCode, user: User, approve: bool) -> None:
    """Record the user's answer; the polling client picks it up at the token endpoint."""
    row.user_id = user.id
    row.status = "approved" if approve else "denied"
