"""Where a job input's bytes come from, resolved when the worker stages it.

- `upload:<id>`: the owner's complete upload; its blob in the gateway store.
- `site://NAME/PATH`: a regular file at a federated site, read as the owner's account
  there. Its real path (symlinks resolved on that site) must not lie in the gateway's
  own area of the site (job directories, cache) unless it is in one of the owner's own
  job directories there; on the local site (the gateway's host) only the owner's own job
  directories may be read at all. A directory's files are listed under the same rules
  (`site_directory`, for a GA4GH TES DIRECTORY input).
- `https://`: fetched into the gateway store first (see gateway.services.data.https_fetch),
  then staged like an upload.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from adapters.transfer import LocalFile, SiteFile, Source, site_fs
from adapters.transfer.listing import list_tree
from adapters.transfer.site_fs import SiteCommandFailed
from adapters.transfer.staging import StagedFile
from adapters.transport import FileTransport
from gateway.domain.errors import GatewayError, NotFound
from gateway.domain.staging import InputSource, SourceKind
from gateway.repositories import uploads
from gateway.repositories.jobs import queries as job_queries
from gateway.services.data.uploads import COMPLETE
from gateway.services.sites.entry import LOCAL_SITE, NoAccount, SiteEntry
from gateway.services.sites.registry import SiteRegistry
from gateway.store import BlobStore


class InputUnavailable(GatewayError):
    """An input cannot be staged as asked (gone, not allowed, too large): the job fails."""

    title = "Input unavailable"


@dataclass(frozen=True)
class ResolvedInput:
    """Bytes to stage and the content they must have."""

    source: Source
    expected: StagedFile
    # A gateway-local copy made only for this staging (an https download): removed
    # once the input is staged.
    scratch: Path | None = None


def upload_input(session: Session, store: BlobStore, owner_id: str, upload_id: str
                 ) -> ResolvedInput:
    """The owner's complete upload, from its blob in the store."""
    row = uploads.facts(session, owner_id, upload_id)
    if row is None or row.state != COMPLETE or row.sha256 is None:
        raise InputUnavailable(f"upload {upload_id} is no longer a complete upload of the "
                               "job's owner (deleted or expired since submission)")
    try:
        size = store.blob_size(row.sha256)
    except NotFound:
        raise InputUnavailable(f"the content of upload {upload_id} is no longer in the "
                               "gateway store") from None
    if size != row.size:
        raise InputUnavailable(f"upload {upload_id} holds {size} bytes in the store, not "
                               f"{row.size}")
    return ResolvedInput(LocalFile(store.blob_path(row.sha256)), StagedFile(row.sha256, size))


def site_input(session: Session, registry: SiteRegistry, owner_id: str,
               username: str | None, source: InputSource) -> ResolvedInput:
    """A file at a federated site, as the owner's account there, size and sha256 taken
    on that site (see the module for what may be read)."""
    assert source.site is not None and source.path is not None
    entry = registry.get(source.site)
    files = _files_of(entry, username)
    real = _readable(session, entry, files, owner_id, source.path)
    size = site_fs.file_size(files, real)
    if size is None:
        raise InputUnavailable(f"site://{entry.name}{source.path} vanished while staging")
    return ResolvedInput(SiteFile(files, real, size),
                         StagedFile(site_fs.sha256_of(files, real), size))


def site_directory(session: Session, registry: SiteRegistry, owner_id: str,
                   username: str | None, site: str, path: str, max_files: int) -> list[str]:
    """The regular files below a directory at a federated site, relative to it (sorted;
    links left out), listed as the owner's account there under the rules of a site://
    file; InputUnavailable when it cannot be read or holds more than `max_files`."""
    entry = registry.get(site)
    files = _files_of(entry, username)
    real = _readable(session, entry, files, owner_id, path)
    try:
        # The trailing '/' makes find fail on anything but a directory.
        listed = list_tree(files, real + "/")
    except SiteCommandFailed:
        raise InputUnavailable(f"site://{entry.name}{path} is not a directory your "
                               f"account at site '{entry.name}' can list") from None
    names = sorted(item.path for item in listed if not item.is_symlink)
    if len(names) > max_files:
        raise InputUnavailable(f"site://{entry.name}{path} holds {len(names)} files; a job "
                               f"takes at most {max_files} inputs")
    return names


def _files_of(entry: SiteEntry, username: str | None) -> FileTransport:
    try:
        return entry.adapter_for(username).files
    except NoAccount as exc:
        raise InputUnavailable(exc.detail) from None


def _readable(session: Session, entry: SiteEntry, files: FileTransport, owner_id: str,
              path: str) -> str:
    """`path` at the site with its links resolved, if the owner may read it there."""
    root = site_fs.real_path(files, entry.workdir_root) or entry.workdir_root.rstrip("/")
    own = _own_tags(session, owner_id, entry.name)
    real = site_fs.real_path(files, path)
    # On the gateway's own host, whether a file exists is not the user's business either.
    if real is None and not (entry.name == LOCAL_SITE and not _in_own_dir(path, root, own)):
        raise InputUnavailable(f"site://{entry.name}{path} does not exist (or is not "
                               "readable by your account there)")
    inside_root = real is not None and (real == root or real.startswith(root + "/"))
    if real is None or ((inside_root or entry.name == LOCAL_SITE)
                        and not _in_own_dir(real, root, own)):
        raise InputUnavailable(
            f"site://{entry.name}{path} is not in one of your own job directories "
            f"at site '{entry.name}'; the gateway reads nothing else of its own area there")
    return real


def _in_own_dir(path: str, root: str, own_tags: set[str]) -> bool:
    if not path.startswith(root + "/"):
        return False
    first, slash, rest = path[len(root) + 1:].partition("/")
    return bool(slash and rest) and first in own_tags


def _own_tags(session: Session, owner_id: str, site: str) -> set[str]:
    """The tags (job directory names) of the owner's attempts at `site`."""
    return job_queries.attempt_tags(session.connection(), owner_id, site)


__all__ = ["InputUnavailable", "ResolvedInput", "SourceKind", "site_directory", "site_input",
           "upload_input"]
