"""https:// SIF images: downloaded again only when the server says they changed.

The first download of a URL goes into the gateway's image cache (gateway.services.
image_cache) with the validators the server sent (ETag, Last-Modified), recorded in
`registry/https/<sha256 of the URL>.json` after the SIF is in place. A later staging sends a
conditional GET (If-None-Match, If-Modified-Since) and a 304 reuses the cached SIF, so an
unchanged image crosses the network once; a changed one (a 200) replaces it. A server
that sends no validators, or says `Cache-Control: no-store`, gets a full download each
time, kept only for that staging (https_fetch.https_input's scratch file). Workers staging
one URL at once hold the cache's lock on it, so it is downloaded once.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from adapters.transfer import LocalFile
from adapters.transfer.staging import StagedFile
from gateway.services.data.https_fetch import IPAddress, fetch, is_public_address
from gateway.services.data.input_sources import ResolvedInput
from gateway.services.images.cache import ImageCache
from gateway.settings import Settings
from gateway.store import BlobStore


def _read_entry(path: Path, url: str) -> dict[str, str | int] | None:
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("url") != url:
        return None
    return entry


def _write_entry(path: Path, entry: dict[str, str | int]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{uuid.uuid4()}.part")
    part.write_text(json.dumps(entry))
    os.replace(part, path)


def _conditions(entry: dict[str, str | int]) -> dict[str, str]:
    conditions = {}
    if isinstance(etag := entry.get("etag"), str):
        conditions["If-None-Match"] = etag
    if isinstance(modified := entry.get("last_modified"), str):
        conditions["If-Modified-Since"] = modified
    return conditions


def https_image(settings: Settings, store: BlobStore, url: str, *,
                schemes: tuple[str, ...] = ("https",),
                allowed: Callable[[IPAddress], bool] = is_public_address) -> ResolvedInput:
    """The SIF at `url`, from the cache when the server answers 304 (see module);
    InputUnavailable as https_fetch.fetch raises it. `schemes`, `allowed`: for tests."""
    cache = ImageCache(store)
    key = "url-" + hashlib.sha256(url.encode()).hexdigest()
    entry_path = cache.root / "https" / f"{key}.json"
    with cache.locked(key):
        entry = _read_entry(entry_path, url)
        hit = None
        if entry is not None:
            sha256, size = entry.get("sha256"), entry.get("size")
            if isinstance(sha256, str) and isinstance(size, int):
                hit = cache.sif(sha256, size)
        tmp = store.new_incoming()
        try:
            with tmp.open("wb") as sink:
                fetched = fetch(url, sink, max_bytes=settings.https_input_max_bytes,
                                max_redirects=settings.https_max_redirects,
                                timeout=settings.https_timeout_seconds, schemes=schemes,
                                allowed=allowed,
                                conditions=_conditions(entry) if hit and entry else None)
            if fetched.not_modified and hit is not None:
                tmp.unlink()
                os.utime(entry_path)  # sweep_image_cache keeps the entry a while longer
                return hit
            if fetched.etag is None and fetched.last_modified is None:
                entry_path.unlink(missing_ok=True)
                return ResolvedInput(LocalFile(tmp), StagedFile(fetched.sha256, fetched.size),
                                     scratch=tmp)
            resolved = cache.put([], tmp, fetched.sha256)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _write_entry(entry_path, {"url": url, "sha256": fetched.sha256, "size": fetched.size,
                                  **({"etag": fetched.etag} if fetched.etag else {}),
                                  **({"last_modified": fetched.last_modified}
                                     if fetched.last_modified else {})})
        return resolved
