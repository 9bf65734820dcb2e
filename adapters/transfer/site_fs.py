"""The site-side file commands staging needs, as argv over a Transport (no shell strings).

GNU coreutils on the site is assumed (stat -c, sha256sum, mv -T, ln -T), as on every
Linux cluster; OpenSSL hashes where present. A command that fails raises
`SiteCommandFailed` with its stderr.
"""

from __future__ import annotations

import posixpath
import re

# SiteCommandFailed is drawn with the other adapter errors; importable from here as before.
from adapters.errors import SiteCommandFailed as SiteCommandFailed
from adapters.transport import Transport

# A command of ours on a file: long enough for sha256sum of a few GiB on a slow disk.
HASH_TIMEOUT = 600.0
COMMAND_TIMEOUT = 60.0
_SHA256 = re.compile(r"[0-9a-f]{64}")
# The hasher: OpenSSL where the site has it (it uses the CPU's SHA extensions: 1 GiB in
# 0.9 s on the testbed, where Debian's coreutils sha256sum takes 4.5 s), else sha256sum.
# Both print "<hex> ..."; the path is "$1" (absolute, so never taken for an option).
_HASH_SCRIPT = ('if command -v openssl >/dev/null 2>&1; then exec openssl dgst -sha256 -r "$1"; '
                'else exec sha256sum -- "$1"; fi')
# The directory maker: umask 077 so every directory it creates (parents too) is 0700;
# then what the path is (not following a symlink), its owner and mode, and who we are.
# The path is "$1", data, never part of the script.
_MKDIR_SCRIPT = 'umask 077 && mkdir -p -- "$1" && stat -c "%F|%u|%a" -- "$1" && id -u'



def _run(transport: Transport, argv: list[str], timeout: float = COMMAND_TIMEOUT) -> str:
    result = transport.run(argv, timeout=timeout)
    if result.exit_status != 0:
        err = result.stderr.decode("utf-8", "replace").strip()[-500:]
        raise SiteCommandFailed(f"`{' '.join(argv[:2])} ...` failed on the site "
                                f"(exit {result.exit_status}): {err}")
    return result.stdout.decode("utf-8", "replace")


def output(transport: Transport, argv: list[str], timeout: float = COMMAND_TIMEOUT) -> str:
    """The command's stdout; SiteCommandFailed when it fails."""
    return _run(transport, argv, timeout)


def is_sha256(text: str) -> bool:
    return bool(_SHA256.fullmatch(text))


def make_private_dir(transport: Transport, path: str) -> None:
    """Create `path` and missing parents, each new one 0700. The directory (new or not)
    must be a real directory of this account that nobody else can write to: otherwise
    another account (on a shared scratch) could read or replace what is put in it."""
    out = _run(transport, ["sh", "-c", _MKDIR_SCRIPT, "gridgate-mkdir", path]).splitlines()
    try:
        kind, owner, mode = out[0].split("|")
        me = out[1].strip()
        writable_by_others = int(mode, 8) & 0o022
    except (IndexError, ValueError):
        raise SiteCommandFailed(f"cannot tell who owns {path} on the site: {out!r}") from None
    if kind != "directory":
        raise SiteCommandFailed(f"{path} on the site is a {kind}, not a directory; "
                                "refusing to put files there")
    if owner != me:
        raise SiteCommandFailed(f"{path} on the site belongs to uid {owner}, not to this "
                                f"account (uid {me}); refusing to put files there")
    if writable_by_others:
        raise SiteCommandFailed(f"{path} on the site is writable by other accounts (mode "
                                f"{mode}); refusing to put files there")


def file_size(transport: Transport, path: str) -> int | None:
    """Size of the regular file `path` (symlinks not followed), None if it is missing."""
    result = transport.run(["stat", "-c", "%F %s", "--", path], timeout=COMMAND_TIMEOUT)
    if result.exit_status != 0:
        return None
    kind, _, size = result.stdout.decode().strip().rpartition(" ")
    if kind != "regular file" and kind != "regular empty file":
        raise SiteCommandFailed(f"{path} on the site is a {kind}, not a regular file")
    return int(size)


def sha256_of(transport: Transport, path: str) -> str:
    """sha256 of the file at the absolute `path`, computed on the site."""
    if not posixpath.isabs(path):
        raise ValueError(f"not an absolute path: {path!r}")
    out = _run(transport, ["sh", "-c", _HASH_SCRIPT, "gridgate-hash", path],
               timeout=HASH_TIMEOUT)
    digest = out.split(" ", 1)[0].lstrip("\\")
    if not is_sha256(digest):
        raise SiteCommandFailed(f"hashing {path} on the site printed {out[:100]!r}")
    return digest


def real_path(transport: Transport, path: str) -> str | None:
    """`path` with every symlink resolved on the site; None when it does not exist."""
    result = transport.run(["realpath", "-e", "-z", "--", path], timeout=COMMAND_TIMEOUT)
    if result.exit_status != 0:
        return None
    real = result.stdout.decode("utf-8", "surrogateescape").removesuffix("\0")
    return real if posixpath.isabs(real) and "\0" not in real else None


def remove(transport: Transport, path: str) -> None:
    _run(transport, ["rm", "-f", "--", path])


def rename(transport: Transport, src: str, dest: str) -> None:
    """Atomic rename in one directory (rename(2)); replaces `dest` if it is a file."""
    _run(transport, ["mv", "-f", "-T", "--", src, dest])


def place_copy(transport: Transport, src: str, dest: str) -> None:
    """`dest` becomes a hard link to `src` (a copy where linking is impossible), made
    under the partial name and renamed, so `dest` never shows a half-made copy. Already
    a link to `src` (a staging interrupted after its rename, done again): nothing to do
    (`mv` refuses to rename a file onto another link of itself)."""
    same = transport.run(["test", src, "-ef", dest], timeout=COMMAND_TIMEOUT)
    tmp = partial_name(dest)
    if same.exit_status == 0:
        remove(transport, tmp)  # the interrupted attempt's link, if it left one
        return
    result = transport.run(["ln", "-f", "-T", "--", src, tmp], timeout=COMMAND_TIMEOUT)
    if result.exit_status != 0:
        _run(transport, ["cp", "-f", "-T", "--", src, tmp], timeout=HASH_TIMEOUT)
    rename(transport, tmp, dest)


def partial_name(dest: str) -> str:
    """Where `dest` is written before it is verified: `.<name>.gw-partial` beside it."""
    directory, name = posixpath.split(dest)
    return posixpath.join(directory, f".{name}.gw-partial")
