"""An image's digest: the sha256 of the whole file, hex, as the gateway's uploads and
downloads compute it (gateway/client/uploads.py `file_sha256`), so an image uploaded to the
gateway keeps one name. Shown as `sha256:<hex>`, the notation of OCI and Apptainer."""

from __future__ import annotations

import hashlib
import re
from typing import BinaryIO

from containers.errors import DigestMismatch

HASH_BLOCK = 1024 * 1024  # as the client's uploads read
PREFIX = "sha256:"
_HEX = re.compile(r"[0-9a-f]{64}")




def sha256_of(stream: BinaryIO) -> str:
    """The hex sha256 of what `stream` holds from its start."""
    stream.seek(0)
    digest = hashlib.sha256()
    while block := stream.read(HASH_BLOCK):
        digest.update(block)
    return digest.hexdigest()


def parse_digest(text: str) -> str:
    """The hex of "sha256:<hex>" or "<hex>" (any case); ValueError for anything else."""
    value = text.strip().lower()
    value = value.removeprefix(PREFIX)
    if not _HEX.fullmatch(value):
        raise ValueError(f"{text!r} is not a sha256 digest (64 hexadecimal characters, "
                         f"optionally after '{PREFIX}').")
    return value


def verify_sha256(stream: BinaryIO, expected: str) -> str:
    """The stream's hex sha256 when it is `expected` (either notation); DigestMismatch
    otherwise."""
    want = parse_digest(expected)
    actual = sha256_of(stream)
    if actual != want:
        raise DigestMismatch(want, actual)
    return actual
