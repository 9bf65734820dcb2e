"""Remove what a site's staging cache holds for nobody, once it has been idle a while.

    pruned = prune(transport, "/scratch/.gridgate-cache", idle_seconds=14 * 86400)

A cache entry `<sha256>` is hard-linked into each job directory that uses it, so its link
count says whether any job directory still holds it: one link (the cache's own) means
none does. An unpacked image `<sha256>.d` (what ch-run runs in place) is in use while its
`<sha256>` file is linked into a job directory. One site command removes, of what was last
changed more than `idle_seconds` ago:
- an entry file with one link (its bytes are freed: no job directory shares them);
- an unpacked image whose entry file is gone or has one link;
- a partial upload (`.<sha256>.gw-partial`) nobody resumed.
Each under the entry's site lock (adapters.transfer.site_lock), checked again once the
lock is held, so a staging of that content either finishes before (and its link keeps the
entry) or starts after (and sends or unpacks it anew); an entry whose lock is held is left
for the next time. Locks themselves are never removed here (site_lock breaks stale ones).
Names are matched whole, so nothing else in the directory is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.transfer import site_fs, site_lock
from adapters.transport import Transport

_ENTRY = re.compile(r"(?P<kind>file|dir|partial) (?P<bytes>\d+) (?P<sha>[0-9a-f]{64})")

# "$1" the cache directory, "$2" idle minutes, "$3" who takes the locks. Every path is data.
# For each candidate: take `.<sha>.gw-lock` (mkdir), check again, remove, release; print
# "<kind> <bytes> <sha>" for each removal (bytes: the file's size; 0 for a directory).
_PRUNE_SCRIPT = r"""cd -- "$1" 2>/dev/null || exit 0
idle() { [ -n "$(find "$1" -maxdepth 0 -mmin +"$2" 2>/dev/null)" ]; }
links() { stat -c %h -- "$1" 2>/dev/null || echo 0; }
for e in * .*.gw-partial; do
  case $e in
    .*.gw-partial) sha=${e#.}; sha=${sha%.gw-partial}; kind=partial ;;
    *.d) sha=${e%.d}; kind=dir ;;
    *) sha=$e; kind=file ;;
  esac
  case $sha in *[!0-9a-f]*) continue ;; esac
  [ ${#sha} -eq 64 ] || continue
  [ -e "$e" ] && ! [ -L "$e" ] && idle "$e" "$2" || continue
  lock=".$sha.gw-lock"
  mkdir -m 700 -- "$lock" 2>/dev/null || continue
  printf '%s\n' "$3" > "$lock/holder"
  gone=
  case $kind in
    file) if [ -f "$e" ] && [ "$(links "$e")" = 1 ] && idle "$e" "$2"; then
            size=$(stat -c %s -- "$e") && rm -f -- "$e" && gone=$size; fi ;;
    dir) if [ -d "$e" ] && [ "$(links "$sha")" -le 1 ] && idle "$e" "$2"; then
           chmod -R u+w -- "$e" && rm -rf -- "$e" && gone=0; fi ;;
    partial) if [ -f "$e" ] && idle "$e" "$2"; then
               size=$(stat -c %s -- "$e") && rm -f -- "$e" && gone=$size; fi ;;
  esac
  rm -f -- "$lock/holder"; rmdir -- "$lock"
  [ -z "$gone" ] || echo "$kind $gone $sha"
done"""


@dataclass(frozen=True)
class Pruned:
    """What one prune removed: entry files, unpacked images, partial uploads, and the bytes
    of the files among them."""

    files: int = 0
    unpacked: int = 0
    partials: int = 0
    bytes_freed: int = 0


def prune(transport: Transport, cache_dir: str, *, idle_seconds: float) -> Pruned:
    """Prune the cache at `cache_dir` (see module); a cache that does not exist is empty."""
    if not cache_dir.startswith("/"):
        raise ValueError(f"{cache_dir!r} is not an absolute path")
    minutes = max(1, int(idle_seconds // 60))
    out = site_fs.output(transport, ["sh", "-c", _PRUNE_SCRIPT, "gridgate-prune", cache_dir,
                                     str(minutes), site_lock.own_holder()],
                         timeout=site_fs.HASH_TIMEOUT)
    counts = {"file": 0, "dir": 0, "partial": 0}
    freed = 0
    for line in out.splitlines():
        if match := _ENTRY.fullmatch(line):
            counts[match["kind"]] += 1
            freed += int(match["bytes"])
    return Pruned(counts["file"], counts["dir"], counts["partial"], freed)
