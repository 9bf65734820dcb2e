"""file:// URLs: files on the gateway's host, only inside directories the admin lets a
user use (a TES task's inputs and outputs on a file system the workflow engine shares
with the gateway).

`settings.file_url_dirs` lists directory templates, comma-separated: `{user}` stands for
the user's gateway username and `{project}` for each project they belong to (e.g.
`/srv/gridgate/users/{user},/srv/gridgate/projects/{project}`); a template with neither
is a directory every user may use. A directory that does not exist is nobody's.

Every path is opened one name at a time from its directory without following symbolic
links (O_NOFOLLOW), so a link planted inside cannot lead out of it, and only regular files
are read. Files are written under a temporary name and renamed into place (a reader never
sees half a file); when the gateway runs as root, they and any directory made for them
belong to the directory's owner, as if the user had written them.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.orm import Session

from gateway.domain.deliveries import file_url_path
from gateway.domain.errors import Invalid
from gateway.repositories.identity.projects import of_member

# What a username or project name must be to name a directory (one plain path name).
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_BLOCK = 1 << 20


class FileUrlRefused(Invalid):
    """A file:// URL outside the user's directories, or naming no regular file."""

    title = "File URL refused"


@dataclass(frozen=True)
class FileRoots:
    """The directories a user may use through file:// URLs (each absolute, resolved)."""

    dirs: tuple[Path, ...]

    @classmethod
    def of(cls, templates: str, username: str | None, projects: Iterable[str]) -> FileRoots:
        """The directories `templates` (settings.file_url_dirs) give a user."""
        found: list[Path] = []
        names = [p for p in projects if _NAME.fullmatch(p)]
        for template in filter(None, (t.strip() for t in templates.split(","))):
            if "{user}" in template:
                if username is None or not _NAME.fullmatch(username):
                    continue
                template = template.replace("{user}", username)
            expanded = ([template.replace("{project}", p) for p in names]
                        if "{project}" in template else [template])
            found += [Path(os.path.realpath(d)) for d in expanded if os.path.isdir(d)]
        return cls(tuple(dict.fromkeys(found)))

    @classmethod
    def of_user(cls, session: Session, templates: str, user_id: str,
                username: str | None) -> FileRoots:
        """The directories `templates` give the user, with their projects now."""
        projects = [project.name for project, _ in of_member(session, user_id)]
        return cls.of(templates, username, projects)

    @staticmethod
    def areas(templates: str) -> tuple[str, ...]:
        """Where the per-user and per-project directories of `templates` lie (the
        directory above a template's first `{user}` or `{project}`), as written and
        resolved: `/srv/gridgate/users/{user}` gives `/srv/gridgate/users`."""
        found = []
        for template in filter(None, (t.strip() for t in templates.split(","))):
            head, brace, _ = template.partition("{")
            if brace:
                area = os.path.normpath(head.rsplit("/", 1)[0] or "/")
                found += [area, os.path.realpath(area)]
        return tuple(dict.fromkeys(found))

    def locate(self, url: str) -> tuple[Path, tuple[str, ...]]:
        """The directory `url` lies in and its names below it; FileUrlRefused if none."""
        try:
            path = file_url_path(url)
        except ValueError as exc:
            raise FileUrlRefused(f"{url}: {exc}") from None
        for root in self.dirs:
            prefix = str(root).rstrip("/") + "/"
            if path.startswith(prefix):
                return root, tuple(path.removeprefix(prefix).split("/"))
        raise FileUrlRefused(
            f"{url} lies outside the directories file:// URLs may use for you"
            + (f" ({', '.join(str(d) for d in self.dirs)})" if self.dirs
               else " (the admin declared none: settings file_url_dirs)"))


@contextlib.contextmanager
def _walk(root: Path, names: tuple[str, ...], *, make: bool = False) -> Iterator[int]:
    """A descriptor of directory `root/names...`, each name opened without following a
    symbolic link; `make`: missing directories are made (owned as `root` is)."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for name in names:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
                    _give(fd, name, os.fstat(fd))
            try:
                inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise FileUrlRefused(f"{name!r} in {root} is not a directory that can be "
                                     f"entered without following a link: {exc.strerror}"
                                     ) from None
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _give(dir_fd: int, name: str, owner: os.stat_result) -> None:
    # As root, what the gateway makes belongs to the directory's owner.
    if os.geteuid() == 0:
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=dir_fd, follow_symlinks=False)


@contextlib.contextmanager
def open_file(roots: FileRoots, url: str) -> Iterator[BinaryIO]:
    """The regular file `url` names, open for reading; FileUrlRefused otherwise."""
    root, names = roots.locate(url)
    with _walk(root, names[:-1]) as parent:
        try:
            fd = os.open(names[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, dir_fd=parent)
        except OSError as exc:
            raise FileUrlRefused(f"{url} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileUrlRefused(f"{url} is not a regular file")
        yield file


def list_files(roots: FileRoots, url: str, max_files: int) -> list[str]:
    """The regular files below the directory `url` names, as paths relative to it
    (sorted; links and special files are left out)."""
    root, names = roots.locate(url)
    found: list[str] = []

    def visit(fd: int, prefix: str) -> None:
        for entry in sorted(os.listdir(fd)):
            mode = os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISREG(mode):
                found.append(prefix + entry)
                if len(found) > max_files:
                    raise FileUrlRefused(f"{url} holds more than {max_files} files")
            elif stat.S_ISDIR(mode):
                inner = os.open(entry, _DIR_FLAGS, dir_fd=fd)
                try:
                    visit(inner, f"{prefix}{entry}/")
                finally:
                    os.close(inner)

    with _walk(root, names) as top:
        visit(top, "")
    return found


def write_file(roots: FileRoots, url: str, source: BinaryIO) -> int:
    """Write `source` to the file `url` names (its directories made as needed), whole or
    not at all; the bytes written."""
    root, names = roots.locate(url)
    with _walk(root, names[:-1], make=True) as parent:
        temporary = f".{names[-1]}.gridgate-partial"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644, dir_fd=parent)
        written = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while block := source.read(_READ_BLOCK):
                    written += out.write(block)
                out.flush()
                os.fsync(out.fileno())
            _give(parent, temporary, os.fstat(parent))
            os.rename(temporary, names[-1], src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise
        os.fsync(parent)
    return written
