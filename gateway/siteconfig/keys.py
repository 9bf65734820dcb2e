"""SSH material in a site config: pinned host public keys and references to private keys.

A site config never holds a private key. It names one: by absolute `path`, or by `secret`
(a file name inside the gateway's secrets directory). Anything that looks like a private
key is refused wherever it appears, with a message that says where to put it instead.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from gateway.domain.errors import Invalid
from rules.text import TextRule

# The key types OpenSSH offers as host keys (DSA is gone since OpenSSH 7.0).
HOST_KEY_TYPES = frozenset({
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
})
_PEM_PRIVATE = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
# base64 of "openssh-key-v1\0": the body of an OpenSSH private key pasted without armour.
_OPENSSH_PRIVATE_BODY = "b3BlbnNzaC1rZXktdjE"
_SECRET_NAME = TextRule("secret file name", r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
                        "letters, digits, '.', '_' or '-' (no '/')")
PRIVATE_KEY_ADVICE = (
    "never put a private key in a site config: save it in a file only the gateway can read "
    "(chmod 600) and reference it, e.g. `key: {path: /etc/gridgate/keys/site_ed25519}` or "
    "`key: {secret: site_ed25519}`"
)


def looks_like_private_key(value: str) -> bool:
    """Whether `value` contains a PEM/OpenSSH private key (armoured or bare)."""
    return bool(_PEM_PRIVATE.search(value)) or _OPENSSH_PRIVATE_BODY in value \
        or "PuTTY-User-Key-File" in value


def no_private_key(value: str) -> str:
    """Validator for every text field: refuse pasted private keys."""
    if looks_like_private_key(value):
        raise ValueError(f"this looks like a private key; {PRIVATE_KEY_ADVICE}")
    return value


def check_absolute_path(value: str) -> str:
    """An absolute POSIX path without `..`, NUL or line breaks."""
    if not value.startswith("/"):
        raise ValueError(f"{value!r} is not an absolute path: write it from the root "
                         "(starting with /)")
    if any(ch in value for ch in "\0\n\r"):
        raise ValueError("a path cannot contain NUL or line breaks")
    if ".." in PurePosixPath(value).parts:
        raise ValueError(f"{value!r} contains '..': write the path without it")
    return value


SafeText = Annotated[str, AfterValidator(no_private_key)]
AbsolutePath = Annotated[
    str,
    AfterValidator(no_private_key),
    AfterValidator(check_absolute_path),
    Field(json_schema_extra={"pattern": "^/"}),
]


def parse_host_key(line: str) -> tuple[str, bytes]:
    """(key type, key blob) of an OpenSSH public key line `<type> <base64> [comment]`."""
    parts = line.split(None, 2)
    if len(parts) < 2:
        raise ValueError(
            "a host key is one OpenSSH public key line '<type> <base64> [comment]', as in "
            "the site's /etc/ssh/ssh_host_ed25519_key.pub")
    key_type, data = parts[0], parts[1]
    if key_type not in HOST_KEY_TYPES:
        if data in HOST_KEY_TYPES:
            raise ValueError(
                f"this is a known_hosts line: drop the leading host field {key_type!r} and "
                "keep '<type> <base64> [comment]'")
        if key_type.startswith("@"):
            raise ValueError(f"{key_type} markers are not supported: pin the host key itself")
        if key_type == "ssh-dss":
            raise ValueError("DSA host keys are refused (OpenSSH disabled them in 7.0): pin "
                             "the site's ed25519 key")
        known = ", ".join(sorted(HOST_KEY_TYPES))
        raise ValueError(f"unknown host key type {key_type!r}: use one of {known}")
    try:
        blob = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the {key_type} key data is not valid base64: copy the whole line "
                         "from the .pub file") from None
    # The blob starts with its own type name (RFC 4253 string): a cheap integrity check.
    if len(blob) < 4:
        raise ValueError(f"the {key_type} key data is truncated: copy the whole line")
    (length,) = struct.unpack(">I", blob[:4])
    if blob[4:4 + length] != key_type.encode():
        raise ValueError(f"the key data does not belong to a {key_type} key: copy the whole "
                         "line from the .pub file")
    if key_type == "ssh-ed25519" and len(blob) != 4 + 11 + 4 + 32:
        raise ValueError("the ssh-ed25519 key data has the wrong length: copy the whole line")
    return key_type, blob


def _check_host_key(line: str) -> str:
    line = line.strip()
    parse_host_key(line)
    return line


HostKeyLine = Annotated[
    str,
    AfterValidator(no_private_key),
    AfterValidator(_check_host_key),
    Field(description="An OpenSSH public key line: '<type> <base64> [comment]'.",
          json_schema_extra={"pattern": r"^\s*(ssh-|ecdsa-|sk-)\S+\s+[A-Za-z0-9+/=]+"}),
]


def fingerprint(blob: bytes) -> str:
    """The key's SHA256 fingerprint as OpenSSH prints it (`ssh-keygen -lf`)."""
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def check_unique_host_keys(lines: list[str]) -> list[str]:
    """Refuse the same key pinned twice (a copy-paste slip that hides a missing key)."""
    seen: set[bytes] = set()
    for line in lines:
        key_type, blob = parse_host_key(line)
        if blob in seen:
            raise ValueError(f"the {key_type} key {fingerprint(blob)} is listed twice: remove "
                             "the duplicate")
        seen.add(blob)
    return lines


def _check_secret_name(value: str) -> str:
    if not _SECRET_NAME.matches(value):
        raise ValueError(f"{value!r} is not a plain file name: use letters, digits, '.', '_' "
                         "or '-' (no '/'); for a file elsewhere use `path`")
    return value


SecretName = Annotated[
    str,
    AfterValidator(no_private_key),
    AfterValidator(_check_secret_name),
    Field(json_schema_extra={"pattern": _SECRET_NAME.json_pattern}),
]


class KeyRef(BaseModel):
    """Where the gateway finds a private key: exactly one of `path` or `secret`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: AbsolutePath | None = Field(
        default=None, description="Absolute path of the private key file (mode 0600).")
    secret: SecretName | None = Field(
        default=None,
        description="File name of the private key inside the gateway's secrets directory.")

    @model_validator(mode="before")
    @classmethod
    def _not_inline(cls, data: Any) -> Any:
        if isinstance(data, str):
            if looks_like_private_key(data):
                raise ValueError(f"this looks like a private key; {PRIVATE_KEY_ADVICE}")
            raise ValueError("a key reference is a mapping: `{path: /absolute/file}` or "
                             "`{secret: file-name}`")
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.path is None) == (self.secret is None):
            raise ValueError("give exactly one of `path` (an absolute file path) or `secret` "
                             "(a file name in the gateway's secrets directory)")
        return self

    def describe(self) -> str:
        """How to name this reference in a message (never the key itself)."""
        return f"path {self.path}" if self.path is not None else f"secret {self.secret}"


def resolve_key_path(ref: KeyRef, secrets_dir: Path | None) -> Path:
    """The file a key reference points to; `secret` names resolve inside `secrets_dir`."""
    if ref.path is not None:
        return Path(ref.path)
    assert ref.secret is not None
    if secrets_dir is None:
        raise Invalid(
            f"The key reference 'secret: {ref.secret}' needs the gateway's secrets directory: "
            "set GRIDGATE_SECRETS_DIR (or use `path:` in the site config).", field="key")
    return secrets_dir / ref.secret
