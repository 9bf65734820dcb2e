"""The portal's scripts and style sheet (static/), served by the gateway itself: read once,
compressed once, and named in pages with their digest (`?v=`), so a browser keeps each
one until it changes."""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

STATIC_DIR = Path(__file__).resolve().parent / "static"
PREFIX = "/portal/static/"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


@dataclass(frozen=True)
class Asset:
    """One file of static/, plain and gzip-compressed, with its digest."""

    body: bytes
    gzipped: bytes
    digest: str
    media_type: str


@cache
def assets() -> dict[str, Asset]:
    """Every asset by file name (read on first use; the files do not change at run time)."""
    found = {}
    for path in sorted(STATIC_DIR.iterdir()):
        if path.suffix in _TYPES:
            body = path.read_bytes()
            found[path.name] = Asset(body, gzip.compress(body, 9, mtime=0),
                                     hashlib.sha256(body).hexdigest()[:16],
                                     _TYPES[path.suffix])
    return found


def url(name: str) -> str:
    """The URL a page names an asset by (KeyError for a name that is not an asset)."""
    return f"{PREFIX}{name}?v={assets()[name].digest}"
