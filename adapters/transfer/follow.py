"""Verify a large file on the site while it arrives: its sha256 is ready with the last byte.

    follower = Follower(transport, partial, expected, reorder,
                        Follower.place(rename_to=..., unlock=..., link_to=...))
    transport.upload(...)        # meanwhile the site reads and hashes what has landed
    found = follower.result()    # "placed"/"mismatch" as verify_and_place says; None: it
                                 # could not follow, verify afterwards as usual

One site command, in a thread of the gateway, started just before the upload: a small
Python program (where the site has python3) reads the file in order, from its start, up to
what the upload has certainly written: by the FileTransport contract every byte below the
file's size less `write_reorder_bytes`, and all of it once the file has its full size (the
upload's last write goes after all others are acknowledged: sftp_wire.write_striped). So
it hashes each byte after it was written, as a hash after the upload would. Then, in the
same command, the place script's tail (site_fs.PLACE_TAIL) compares the digest and renames,
unlocks and links: no verify command after the upload, and nothing to go stale between a
hash and a separate placing command. Before placing it checks that the path is still the
file it read (inode, full size) and, for a cache entry, that the lock still names this
gateway process (a process that took the lock over after this one died sends its own).

An earlier follower (commit 8b752d8) was slower on this 2-core machine: it polled with a
shell loop (two processes per poll), piped every byte through `head` into openssl, and
hashed at the priority of the transfer. This one makes no process per step, hashes in
16 MiB steps straight from the page cache (mmap: no copy at all) and runs under `nice`, so
it takes the CPU the transfer leaves idle (about a quarter of both cores, measured) and
yields the rest. The transfer still slows by 0.05-0.08 s, less than the 0.14 s hash saved.

What it cannot see, and a hash after the upload could: a write by something other than the
upload into a part already read while the upload still ran. Nothing else writes a partial
file: it lives in a 0700 directory of the gateway's account under a name only gateway
stagings use, and stagings of one cache entry hold the site lock. Anything unexpected (no
python3, no growth for `STALL_SECONDS`, a failed command, a file cut short under the
mapping, which kills the reader with SIGBUS) makes it end without touching the file; then
the file is verified after the upload as before. A reader whose SSH session is gone (the
connection dropped mid-upload) stops too: the resumed upload starts a follower of its own,
and an orphan placing the file under it made the staging send it all again.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from adapters.transfer import site_fs, site_lock
from adapters.transport import Transport

if TYPE_CHECKING:
    from adapters.transfer.staging import StagedFile

log = logging.getLogger("adapters.transfer")

# The follower ends (touching nothing) when the file has not grown for this long.
STALL_SECONDS = 5.0
# Niceness of the site's hasher: it takes what the transfer leaves idle. Measured on the
# testbed (5 stagings each): 19 beat 10 by 0.02-0.03 s, and mmap beat pread by as much.
NICE = 19
_STEP = 16 << 20
# argv: the file, its full size, reorder bytes, stall seconds. Prints "<sha256> <inode>"
# once it has read all of it, "stalled <bytes read>" when it gave up.
_FOLLOW_PY = f"""import hashlib, mmap, os, select, stat, sys, time
path, size, reorder, stall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def stalled(pos):
    print("stalled", pos)
    sys.exit(0)
# Our stderr is the SSH session's: once the gateway's connection is gone it reports an
# error or hang-up, and this reader must stop (touching nothing) rather than place a file
# that the resumed staging, with a follower of its own, is still sending.
session = select.poll()
if stat.S_ISFIFO(os.fstat(2).st_mode) or stat.S_ISSOCK(os.fstat(2).st_mode):
    session.register(2, 0)
def orphaned():
    if session.poll(0):
        sys.exit(0)
quiet = time.monotonic() + stall
while True:
    orphaned()
    try:
        fd = os.open(path, os.O_RDONLY)
        break
    except FileNotFoundError:
        if time.monotonic() > quiet:
            stalled(0)
        time.sleep(0.01)
h, pos = hashlib.sha256(), 0
while pos < size:
    orphaned()
    have = os.fstat(fd).st_size
    end = size if have >= size else have - reorder
    if end - pos >= {_STEP} or (end == size and end > pos):
        with mmap.mmap(fd, end, access=mmap.ACCESS_READ) as mm, memoryview(mm) as view:
            h.update(view[pos:end])
        pos = end
        quiet = time.monotonic() + stall
    elif time.monotonic() > quiet:
        stalled(pos)
    else:
        time.sleep(0.005)
orphaned()
print(h.hexdigest(), os.fstat(fd).st_ino)
"""
# python3 -I -S: no PYTHON* variables, user or site packages (nothing of the account's can
# stand in for hashlib), and a faster start.
# "$1".."$7" as the place script's; "$8" the program above, "$9" reorder bytes, "${10}"
# stall seconds, "${11}" niceness, "${12}" this process's lock holder string. Prints what
# the place script prints, or "stalled ..."/"unavailable" (nothing was touched).
_FOLLOW_SCRIPT = r"""command -v python3 >/dev/null 2>&1 || { echo unavailable; exit 0; }
r=$(nice -n "${11}" python3 -I -S -c "$8" "$1" "$2" "$9" "${10}") || { echo unavailable; exit 0; }
case $r in *" "*) ;; *) echo unavailable; exit 0 ;; esac
case $r in stalled*) echo "$r"; exit 0 ;; esac
h=${r%% *}
if [ -n "$5" ] && [ "$(cat -- "$5/holder" 2>/dev/null)" != "${12}" ]; then
  echo "stalled: the lock is not ours"; exit 0
fi
s=$(stat -c "%F %i %s" -- "$1" 2>/dev/null) || { echo "stalled: gone"; exit 0; }
[ "$s" = "regular file ${r#* } $2" ] || { echo "stalled: changed"; exit 0; }
""" + site_fs.PLACE_TAIL


@dataclass(frozen=True)
class Placing:
    """Where a verified file goes (site_fs.verify_and_place's arguments) and, for a cache
    entry, the lock holder string that must still be in the lock."""

    rename_to: str
    unlock: str | None
    link_to: str | None
    holder: str


class Follower:
    """Verifies and places `path` on the site, in a thread, while an upload fills it."""

    @staticmethod
    def place(*, rename_to: str, unlock: str | None, link_to: str | None) -> Placing:
        return Placing(rename_to, unlock, link_to, site_lock.own_holder())

    def __init__(self, transport: Transport, path: str, expected: StagedFile,
                 reorder_bytes: int, place: Placing) -> None:
        self.path = path
        self._out: list[site_fs.Verified] = []
        link = place.link_to
        self._argv = ["sh", "-c", _FOLLOW_SCRIPT, "gridgate-follow", path,
                      str(expected.size), expected.sha256, place.rename_to,
                      place.unlock or "", link or "", site_fs.partial_name(link) if link else "",
                      _FOLLOW_PY, str(reorder_bytes), str(STALL_SECONDS), str(NICE),
                      place.holder]
        self._thread = threading.Thread(target=self._run, args=(transport,), daemon=True,
                                        name="gridgate-follow")
        self._thread.start()

    def _run(self, transport: Transport) -> None:
        try:
            answer = site_fs.output(transport, self._argv, timeout=site_fs.HASH_TIMEOUT)
            if answer.startswith(("placed", "mismatch")):
                self._out.append(site_fs.read_verified(self.path, answer))
            else:
                log.info("%s was not verified on arrival (%s); verifying it now",
                         self.path, answer.strip()[:200])
        except Exception as exc:  # any failure only means verifying after the upload
            log.info("could not verify %s on arrival (%s); verifying it now", self.path,
                     exc)

    def result(self) -> site_fs.Verified | None:
        """Once it has ended (it does by itself: done, or the file stopped growing): what
        it found, "placed" or "mismatch" (the file deleted); None if it could not tell."""
        self._thread.join(site_fs.HASH_TIMEOUT)
        return self._out[0] if self._out else None
