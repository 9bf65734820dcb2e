"""The one site command a staging into a cache runs before it sends anything.

    claimed = claim(transport, job_dir, cache_dir, entry, expected, dest_path, partial)

In one round trip instead of four (each costs a session, a shell and a reply, 10-20 ms
here): make and check the private directories (site_fs.make_private_dirs); link the cache
entry to the destination if it is there and intact (site_fs.verify_and_place); otherwise
try to take the entry's lock (site_lock) and, once taken, report the sizes of the entry and
of its partial file (what a sender needs to know). Each step is the same script as on its
own, run in a subshell with its arguments as data; nothing after a failed directory check
runs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from adapters.errors import SiteCommandFailed
from adapters.transfer import site_fs, site_lock
from adapters.transport import Transport

log = logging.getLogger("adapters.transfer")

# "$1" "$2" the job's and the cache's directories; "$3".."$9" the place script's arguments
# (the entry, size, sha256, "", "", the destination and its partial name); "${10}"-"${12}"
# the lock script's (lock, stale seconds, holder); "${13}" the entry's partial file.
# Prints each directory's stat line and our uid (and stops if one is not private: the
# gateway then says why), the place script's answer (and stops once "placed"), the lock
# script's answer, and, when the lock was taken, the entry's and the partial's sizes.
_CLAIM_SCRIPT = f"""umask 077
me=$(id -u) || exit 1
bad=
for d in "$1" "$2"; do
  mkdir -p -- "$d" && s=$(stat -c "%F|%u|%a" -- "$d") || exit 1
  printf '%s\\n' "$s"
  case $s in
    "directory|$me|"*[2367]?|"directory|$me|"*[2367]) bad=1 ;;
    "directory|$me|"*) ;;
    *) bad=1 ;;
  esac
done
echo "$me"
[ -z "$bad" ] || exit 0
r=$(shift 2
{site_fs.PLACE_SCRIPT}
) || exit $?
echo "$r"
[ "$r" != placed ] || exit 0
r=$(shift 9
{site_lock.TAKE_SCRIPT}
) || exit 1
printf '%s\\n' "$r"
[ "$r" = taken ] || exit 0
for p in "$3" "${{13}}"; do stat -c "%F %s" -- "$p" 2>/dev/null || echo missing; done"""


@dataclass(frozen=True)
class Claimed:
    """What `claim` found: `placed` (the cache served it), else the lock script's
    `answer` (see site_lock) and, when it was "taken", the entry's and partial's sizes."""

    placed: bool
    answer: str = ""
    entry_size: int | None = None
    partial_size: int | None = None


def claim(transport: Transport, job_dir: str, cache_dir: str, entry: str,
          expected_size: int, sha256: str, dest_path: str, partial: str) -> Claimed:
    """Run the claim command (see the module) and read its answer."""
    if not site_fs.is_sha256(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    lock = site_lock.lock_name(cache_dir, sha256)
    argv = ["sh", "-c", _CLAIM_SCRIPT, "gridgate-claim", job_dir, cache_dir,
            entry, str(expected_size), sha256, "", "", dest_path,
            site_fs.partial_name(dest_path), lock, str(int(site_lock.STALE_AFTER)),
            site_lock.own_holder(), partial]
    lines = site_fs.output(transport, argv, timeout=site_fs.HASH_TIMEOUT).splitlines()
    if len(lines) < 3:
        raise SiteCommandFailed(f"cannot tell who owns {job_dir}, {cache_dir} on the site: "
                                f"{lines!r}")
    for path, line in zip((job_dir, cache_dir), lines, strict=False):
        site_fs.check_private(path, line, lines[2].strip())
    found = site_fs.read_verified(entry, lines[3] if len(lines) > 3 else "")
    if found.outcome == "placed":
        return Claimed(placed=True)
    if found.outcome == "mismatch":
        log.warning("cache entry %s no longer matches its sha256; dropped it", entry)
    answer = "\n".join(lines[4:6])
    if not answer.startswith("taken"):
        return Claimed(placed=False, answer=answer)
    if len(lines) != 7:
        raise SiteCommandFailed(f"stat of {entry} and {partial} on the site printed "
                                f"{lines[5:]!r}")
    entry_size, partial_size = (None if line == "missing" else site_fs.regular_size(p, line)
                                for p, line in zip((entry, partial), lines[5:], strict=True))
    return Claimed(placed=False, answer="taken", entry_size=entry_size,
                   partial_size=partial_size)
