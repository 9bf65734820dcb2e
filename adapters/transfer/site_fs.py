"""The site-side file commands staging needs, as argv over a Transport (no shell strings).

GNU coreutils on the site is assumed (stat -c, sha256sum, mv -T, ln -T), as on every
Linux cluster; OpenSSL hashes where present. A command that fails raises
`SiteCommandFailed` with its stderr.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

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
_MKDIR_SCRIPT = ('umask 077 && for d; do mkdir -p -- "$d" && stat -c "%F|%u|%a" -- "$d" || '
                 'exit 1; done && id -u')
# Sizes of several files in one command: a line each, "<kind> <size>" or "missing".
_SIZES_SCRIPT = 'for p; do stat -c "%F %s" -- "$p" 2>/dev/null || echo missing; done'
# What the place script (below; the same arguments) does once "$1" hashed to "$h":
# compare with "$3", then rename, unlock and link ("missing" if the file went between the
# hash and the link: a cache entry adapters.transfer.cache_prune removed meanwhile).
# adapters.transfer.follow ends with it.
PLACE_TAIL = r"""if [ "$h" != "$3" ]; then rm -f -- "$1"; echo "mismatch $h"; exit 0; fi
kept=$1
if [ -n "$4" ]; then mv -f -T -- "$1" "$4" || exit 4; kept=$4; fi
if [ -n "$5" ]; then rm -f -- "$5/holder"; rmdir -- "$5" 2>/dev/null; fi
if [ -n "$6" ] && [ "$kept" -ef "$6" ]; then
  rm -f -- "$7"  # linked by an interrupted run (mv refuses a link onto itself)
elif [ -n "$6" ]; then
  if ! { ln -f -T -- "$kept" "$7" 2>/dev/null || cp -f -T -- "$kept" "$7"; }; then
    [ -e "$kept" ] || { echo missing; exit 0; }  # pruned meanwhile (cache_prune): resend
    exit 5
  fi
  mv -f -T -- "$7" "$6" || exit 5
fi
echo placed"""
# Verify a file and put it in place, in one command (one round trip instead of five): "$1"
# the file, "$2" its expected size, "$3" its expected sha256 (hex), "$4" where to rename it
# ("" keeps it), "$5" a lock directory (adapters.transfer.site_lock) to remove once it is
# in place (""), "$6" a name to hard-link (or copy) it to ("": none), made as "$7" first
# then renamed. Every path is
# data, never code. Prints "missing", "size <n>", "mismatch <hex>" (the file is deleted) or
# "placed"; exits non-zero (stderr says why) when a command fails.
PLACE_SCRIPT = r"""s=$(stat -c "%F %s" -- "$1" 2>/dev/null) || { echo missing; exit 0; }
case $s in
  "regular file "*|"regular empty file "*) ;;
  *) echo "$1 is a ${s% *}, not a regular file" >&2; exit 2 ;;
esac
if [ "${s##* }" != "$2" ]; then echo "size ${s##* }"; exit 0; fi
if command -v openssl >/dev/null 2>&1; then h=$(openssl dgst -sha256 -r "$1") || exit 3
else h=$(sha256sum -- "$1") || exit 3; fi
h=${h%% *}
case $h in "\\"*) h=${h#?} ;; esac
""" + PLACE_TAIL


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
    make_private_dirs(transport, [path])


def make_private_dirs(transport: Transport, paths: Sequence[str]) -> None:
    """`make_private_dir` for each of `paths`, in one command."""
    out = _run(transport, ["sh", "-c", _MKDIR_SCRIPT, "gridgate-mkdir", *paths]).splitlines()
    if len(out) != len(paths) + 1:
        raise SiteCommandFailed(f"cannot tell who owns {', '.join(paths)} on the site: "
                                f"{out!r}")
    for path, line in zip(paths, out, strict=False):
        check_private(path, line, out[-1].strip())


def check_private(path: str, line: str, me: str) -> None:
    try:
        kind, owner, mode = line.split("|")
        writable_by_others = int(mode, 8) & 0o022
    except ValueError:
        raise SiteCommandFailed(f"cannot tell who owns {path} on the site: {line!r}") from None
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
    return regular_size(path, result.stdout.decode().strip())


def file_sizes(transport: Transport, paths: Sequence[str]) -> list[int | None]:
    """`file_size` of each of `paths`, in one command."""
    out = _run(transport, ["sh", "-c", _SIZES_SCRIPT, "gridgate-sizes", *paths]).splitlines()
    if len(out) != len(paths):
        raise SiteCommandFailed(f"stat of {len(paths)} files on the site printed {out!r}")
    return [None if line == "missing" else regular_size(path, line)
            for path, line in zip(paths, out, strict=True)]


def regular_size(path: str, stat_line: str) -> int:
    kind, _, size = stat_line.rpartition(" ")
    if kind != "regular file" and kind != "regular empty file":
        raise SiteCommandFailed(f"{path} on the site is a {kind}, not a regular file")
    return int(size)


@dataclass(frozen=True)
class Verified:
    """What `verify_and_place` found: "placed", "missing", "size" (the file has `size`
    bytes, not the expected number) or "mismatch" (it hashed to `digest`; now deleted)."""

    outcome: str
    size: int | None = None
    digest: str | None = None


def verify_and_place(transport: Transport, path: str, size: int, sha256: str, *,
                     rename_to: str | None = None, unlock: str | None = None,
                     link_to: str | None = None) -> Verified:
    """In one command on the site: check that the regular file `path` has `size` bytes and
    hashes to `sha256` (a file that does not is deleted); then rename it to `rename_to`,
    remove the lock directory `unlock`, and place a hard link (or copy) of it at `link_to`
    (made under its partial name and renamed, so `link_to` never shows a half-made copy).
    Nothing is renamed, unlocked or linked unless the file is verified."""
    if not is_sha256(sha256) or not posixpath.isabs(path):
        raise ValueError(f"cannot verify {path!r} against {sha256!r}")
    argv = ["sh", "-c", PLACE_SCRIPT, "gridgate-verify", path, str(size), sha256,
            rename_to or "", unlock or "", link_to or "",
            partial_name(link_to) if link_to else ""]
    return read_verified(path, _run(transport, argv, timeout=HASH_TIMEOUT))


def read_verified(path: str, answer: str) -> Verified:
    """The place script's answer about `path`, read (see `verify_and_place`)."""
    words = answer.split()
    match words:
        case ["placed"] | ["missing"]:
            return Verified(words[0])
        case ["size", n] if n.isdigit():
            return Verified("size", size=int(n))
        case ["mismatch", digest] if is_sha256(digest):
            return Verified("mismatch", digest=digest)
    raise SiteCommandFailed(f"verifying {path} on the site printed {' '.join(words)[:200]!r}")


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


def partial_name(dest: str) -> str:
    """Where `dest` is written before it is verified: `.<name>.gw-partial` beside it."""
    directory, name = posixpath.split(dest)
    return posixpath.join(directory, f".{name}.gw-partial")
