"""Put a file on a site, verified and atomically, resuming after dropped connections.

    stage_file(transport, "/store/ab12...", sha256, size, "/scratch/job-7/in/data.h5",
               cache_dir="/scratch/.gridgate-cache")

1. Cache hit: `<cache_dir>/<sha256>` exists with the right size and its sha256, computed
   on the site, matches: it is hard-linked (or copied) into place. Zero bytes sent.
2. Otherwise the bytes go to a partial name (`.<sha256>.gw-partial` in the cache, or
   `.<name>.gw-partial` beside the destination without a cache). A partial left by an
   earlier, interrupted attempt is continued from its current size (less the transport's
   `write_reorder_bytes`, for striped uploads); a dropped connection during this call is
   retried the same way (`max_resumes` times).
3. Size and sha256 are checked on the site and, once both match, the file is renamed into
   place (`mv -f -T`, rename(2)), the site lock released and the job's hard link made: one
   command (site_fs.verify_and_place), or, for a large send, one that started with the
   upload and hashed the bytes as they landed (adapters.transfer.follow). A mismatch
   deletes the partial and sends the whole file again (`max_resends` times), then fails
   with StagingFailed. The final name never shows unverified bytes. New directories are
   0700.

A first staging into a cache costs two site commands: one before the upload that makes the
directories, checks the cache, takes the lock and reads the sizes
(adapters.transfer.claim), and verify-and-place (during the upload, for large files); a
cache hit one. The OpenSSH processes of a large upload start before the first command, so
their handshakes overlap it (PreparesUploads).

With a cache, a sending staging holds the site's lock on the entry
(adapters.transfer.site_lock): stagings of the same content from other gateway processes
wait, then find it cached, so it crosses the network once. Without a cache nothing is
shared. Callers in one process still serialise per (site, sha256) (cheaper than polling).
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
from contextlib import AbstractContextManager
from dataclasses import dataclass

# StagingFailed is drawn with the other adapter errors; importable from here as before.
from adapters.errors import SiteUnavailable
from adapters.errors import StagingFailed as StagingFailed
from adapters.transfer import site_fs, site_lock
from adapters.transfer.claim import claim
from adapters.transfer.follow import Follower, Placing
from adapters.transfer.sources import LocalFile, SiteFile, Source
from adapters.transport import FileTransport, PreparesUploads, Progress

log = logging.getLogger("adapters.transfer")

MAX_RESUMES = 5
MAX_RESENDS = 2
_FILE_MODE = 0o600
# From this many bytes to send, the site verifies the file as it arrives
# (adapters.transfer.follow); below, a hash afterwards costs a few milliseconds.
FOLLOW_MIN_BYTES = 32 << 20



@dataclass(frozen=True)
class StageResult:
    """What one staging did: bytes sent over the network, whether the cache served it,
    how many times it resumed after a dropped connection or resent after a mismatch."""

    dest: str
    bytes_sent: int
    cached: bool
    resumes: int = 0
    resends: int = 0


@dataclass(frozen=True)
class StagedFile:
    """The content expected at the destination."""

    sha256: str
    size: int


def stage_file(
    transport: FileTransport,
    local_path: str,
    sha256: str,
    size: int,
    dest_path: str,
    cache_dir: str | None = None,
    progress: Progress | None = None,
    *,
    max_resumes: int = MAX_RESUMES,
    max_resends: int = MAX_RESENDS,
) -> StageResult:
    """Place the gateway-local file `local_path` at `dest_path` on the site (see module)."""
    return stage(transport, LocalFile(local_path), StagedFile(sha256.lower(), size), dest_path,
                 cache_dir=cache_dir, progress=progress, max_resumes=max_resumes,
                 max_resends=max_resends)


def copy_site_to_site(
    src_transport: FileTransport,
    src_path: str,
    dst_transport: FileTransport,
    dest_path: str,
    *,
    sha256: str | None = None,
    size: int | None = None,
    cache_dir: str | None = None,
    progress: Progress | None = None,
    max_resumes: int = MAX_RESUMES,
    max_resends: int = MAX_RESENDS,
) -> StageResult:
    """Copy `src_path` at one site to `dest_path` at another, streamed through the gateway.

    Without `sha256`/`size` they are taken on the source site (sha256sum there) first, so
    the destination is verified against the source's content.
    """
    if size is None:
        size = site_fs.file_size(src_transport, src_path)
        if size is None:
            raise StagingFailed(f"{src_path} does not exist at the source site")
    if sha256 is None:
        sha256 = site_fs.sha256_of(src_transport, src_path)
    return stage(dst_transport, SiteFile(src_transport, src_path, size),
                 StagedFile(sha256.lower(), size), dest_path, cache_dir=cache_dir,
                 progress=progress, max_resumes=max_resumes, max_resends=max_resends)


def stage(
    transport: FileTransport,
    source: Source,
    expected: StagedFile,
    dest_path: str,
    *,
    cache_dir: str | None = None,
    progress: Progress | None = None,
    max_resumes: int = MAX_RESUMES,
    max_resends: int = MAX_RESENDS,
) -> StageResult:
    """Place `source` (which must hash to `expected`) at `dest_path` (see module)."""
    if not site_fs.is_sha256(expected.sha256):
        raise ValueError(f"not a sha256 hex digest: {expected.sha256!r}")
    if expected.size < 0:
        raise ValueError("size must be >= 0")
    if not posixpath.isabs(dest_path) or posixpath.basename(dest_path) in ("", ".", ".."):
        raise ValueError(f"dest_path must be an absolute file path, not {dest_path!r}")
    if cache_dir is None:
        with _ahead(transport, expected.size, None):
            site_fs.make_private_dirs(transport, [posixpath.dirname(dest_path)])
            sender = _Sender(transport, source, expected, site_fs.partial_name(dest_path),
                             progress, max_resumes, max_resends)
            sender.send_verified(rename_to=dest_path)
        return sender.result(dest_path, cached=False)

    entry = posixpath.join(cache_dir, expected.sha256)
    seen = (id(transport), entry)
    with _ahead(transport, expected.size, seen):
        result = _stage_cached(transport, source, expected, dest_path, cache_dir, entry,
                               progress, max_resumes, max_resends)
    _remember(seen)
    return result


def _stage_cached(transport: FileTransport, source: Source, expected: StagedFile,
                  dest_path: str, cache_dir: str, entry: str, progress: Progress | None,
                  max_resumes: int, max_resends: int) -> StageResult:
    """`stage` through the site's cache entry `entry`."""
    partial = site_fs.partial_name(entry)
    claimed = claim(transport, posixpath.dirname(dest_path), cache_dir, entry,
                    expected.size, expected.sha256, dest_path, partial)
    if claimed.placed:
        return StageResult(dest=dest_path, bytes_sent=0, cached=True)
    with site_lock.hold(transport, cache_dir, expected.sha256,
                        answer=claimed.answer) as lock:
        if claimed.answer == "taken":
            entry_size, have = claimed.entry_size, claimed.partial_size
        else:  # taken after a wait: another gateway process may have sent it meanwhile
            entry_size, have = site_fs.file_sizes(transport, [entry, partial])
        if entry_size == expected.size and _serve_cached(transport, entry, expected,
                                                         dest_path):
            return StageResult(dest=dest_path, bytes_sent=0, cached=True)

        def fresh(done: int) -> None:
            lock.touch()  # a live holder's lock never looks stale
            if progress is not None:
                progress(done)

        sender = _Sender(transport, source, expected, partial, fresh, max_resumes,
                         max_resends)
        # Verified, renamed into the cache, unlocked and linked to dest: one command.
        sender.send_verified(rename_to=entry, unlock=lock.path, link_to=dest_path, have=have)
        lock.removed_by_caller()
    return sender.result(dest_path, cached=False)


# Cache entries this process found or put at a site, by (transport, entry). The next
# staging of one is most likely a cache hit, which sends nothing: no upload connections
# are started ahead for it (connections a site sees cut off mid-handshake look like
# probing). Only a hint: a wrong one costs the overlap, or two unused connections.
_KNOWN_CACHED: set[tuple[int, str]] = set()
_KNOWN_CACHED_MAX = 4096


def _ahead(transport: FileTransport, size: int,
           seen: tuple[int, str] | None) -> AbstractContextManager[None]:
    """Let the transport set up the upload's connections while the site commands before
    it run (PreparesUploads), unless `seen` says the entry is most likely cached."""
    if isinstance(transport, PreparesUploads) and seen not in _KNOWN_CACHED:
        return transport.upload_ahead(size)
    return contextlib.nullcontext()


def _remember(seen: tuple[int, str]) -> None:
    if len(_KNOWN_CACHED) >= _KNOWN_CACHED_MAX:
        _KNOWN_CACHED.clear()
    _KNOWN_CACHED.add(seen)


def _serve_cached(transport: FileTransport, entry: str, expected: StagedFile,
                  dest_path: str) -> bool:
    """Link the cache entry to `dest_path` if it is there and intact. Re-hashed on the site
    every time: a job may have changed its hard-linked copy in place; that entry is dropped
    (by the same command that finds it changed)."""
    found = site_fs.verify_and_place(transport, entry, expected.size, expected.sha256,
                                     link_to=dest_path)
    if found.outcome == "mismatch":
        log.warning("cache entry %s no longer matches its sha256; dropped it", entry)
    return found.outcome == "placed"


_UNKNOWN = -1


class _Sender:
    """Sends one source to one partial file until the site verifies it."""

    def __init__(self, transport: FileTransport, source: Source, expected: StagedFile,
                 partial: str, progress: Progress | None, max_resumes: int,
                 max_resends: int) -> None:
        self.transport, self.source, self.expected = transport, source, expected
        self.partial, self.progress = partial, progress
        self.max_resumes, self.max_resends = max_resumes, max_resends
        self.sent = self.resumes = self.resends = 0

    def result(self, dest: str, *, cached: bool) -> StageResult:
        return StageResult(dest=dest, bytes_sent=self.sent, cached=cached,
                           resumes=self.resumes, resends=self.resends)

    def send_verified(self, *, rename_to: str, unlock: str | None = None,
                      link_to: str | None = None, have: int | None = _UNKNOWN) -> None:
        """Bring the partial file to full size, resuming after dropped connections or
        short writes (at most `max_resumes` times per sending); then, in one command on
        the site, check its size and sha256 and put it in place (see
        site_fs.verify_and_place). A mismatch deletes it and sends the whole file again
        (`max_resends` times). `have`: the partial's size if already known (None: none)."""
        size, attempts = self.expected.size, 0
        if have == _UNKNOWN:
            have = site_fs.file_sizes(self.transport, [self.partial])[0]
        while True:
            found: site_fs.Verified | None = None
            if have is not None and have > size:
                site_fs.remove(self.transport, self.partial)
                have = None
            if have != size:
                if attempts > self.max_resumes:
                    raise StagingFailed(f"{self.partial} stays at {have} of {size} bytes "
                                        f"after {attempts} attempts")
                if attempts:
                    self.resumes += 1
                attempts += 1
                # A striped upload may have left holes just below the partial's end.
                offset = max(0, (have or 0) - self.transport.write_reorder_bytes)
                try:
                    found = self._send_from(offset, Follower.place(
                        rename_to=rename_to, unlock=unlock, link_to=link_to))
                except SiteUnavailable as exc:
                    if attempts > self.max_resumes:
                        raise
                    log.info("staging to %s interrupted (%s); resuming", self.partial, exc)
            if found is None:  # not verified on arrival
                found = site_fs.verify_and_place(self.transport, self.partial, size,
                                                 self.expected.sha256, rename_to=rename_to,
                                                 unlock=unlock, link_to=link_to)
            if found.outcome == "placed":
                return
            if found.outcome != "mismatch":  # short (or gone): send the rest
                have = found.size
                continue
            if self.resends >= self.max_resends:
                raise StagingFailed(
                    f"{self.source.describe()} arrived with sha256 {found.digest}, not "
                    f"{self.expected.sha256}, {self.resends + 1} times; gave up")
            self.resends += 1
            have, attempts = None, 0
            log.warning("sha256 mismatch on %s (got %s); resending", self.partial,
                        found.digest)

    def _send_from(self, offset: int, place: Placing) -> site_fs.Verified | None:
        """Send from `offset`. A large send is verified (and placed) on the site as it
        arrives (adapters.transfer.follow): what that found, None if it could not tell.
        A send that failed yet arrived whole (a lost reply to the last write) counts."""
        follower = None
        if self.expected.size - offset >= FOLLOW_MIN_BYTES:
            follower = Follower(self.transport, self.partial, self.expected,
                                self.transport.write_reorder_bytes, place)
        try:
            self._upload_from(offset)
        except (SiteUnavailable, StagingFailed):
            if follower is None or (found := follower.result()) is None:
                raise
            return found
        return follower.result() if follower is not None else None

    def _upload_from(self, offset: int) -> None:
        before = self.sent
        progress = self.progress

        def counted(done: int) -> None:
            self.sent = before + done
            if progress is not None:
                progress(offset + done)

        with self.source.open_at(offset) as stream:
            written = self.transport.upload(
                stream, self.partial, offset=offset, length=self.expected.size - offset,
                mode=_FILE_MODE, progress=counted)
        self.sent = before + written
        if offset + written != self.expected.size:
            raise StagingFailed(f"{self.source.describe()} ended after {offset + written} "
                                f"bytes; {self.expected.size} were expected")
