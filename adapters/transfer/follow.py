"""The site hashes a file while it arrives, so its sha256 is ready soon after the last byte.

    follower = Follower(transport, "/scratch/.cache/.ab12....gw-partial", size, reorder)
    transport.upload(...)                # meanwhile the site reads and hashes what landed
    hashed = follower.result(wait=30.0)  # None: it could not follow; hash afterwards

One command on the site (in a thread of the gateway, on the transport's command channel)
reads the file from its start, in order, up to what the upload has certainly written: by
the FileTransport contract, every byte below the file's size less `write_reorder_bytes`,
and all of it once the file has reached its full size (the upload's last write goes after
all others are written). Its sha256 is therefore the sha256 of the bytes the file held
when each was read, after it was written: the same proof as hashing the whole file after
the upload, made while the upload runs.

It then prints the file's identity and change time (`stat`: inode, size, ctime), taken
twice 11 ms apart so that any later write shows as a later ctime (a clock tick is at most
10 ms). verify_and_place renames the file without hashing it again only when its identity
and ctime are still those: a file replaced, extended or written to since it was read is
hashed again. What this cannot see, and hashing after the upload could: a write, by
something other than the upload, into a part already read while the upload still ran (or
in the clock tick of its last write). Nothing else writes a partial file: it lives in a
0700 directory of the gateway's account, under a name only gateway stagings use, and
stagings of one cache entry hold the site lock.

Anything unexpected (no file, a stall, a failed command, a digest that does not match)
just means the file is hashed after the upload, as before: a follower never makes a
staging fail and never makes a mismatching file pass.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from adapters.transfer import site_fs
from adapters.transport import Transport

log = logging.getLogger("adapters.transfer")

POLL_SECONDS = 0.02
# The follower gives up when the file has not grown for this long (a dropped upload).
STALL_SECONDS = 30.0
# "$1" the file, "$2" its full size, "$3" the transport's write_reorder_bytes, "$4" polls
# without growth before giving up, "$5" seconds between polls: all data, never code.
_FOLLOW_SCRIPT = r"""n=0
while [ ! -e "$1" ]; do n=$((n + 1)); [ "$n" -gt "$4" ] && exit 0; sleep "$5"; done
exec 3<"$1" || exit 0
if command -v openssl >/dev/null 2>&1; then hash="openssl dgst -sha256 -r"
else hash=sha256sum; fi
pos=0
n=0
while [ "$pos" -lt "$2" ]; do
  [ -e "$1" ] || exit 0
  cur=$(stat -L -c %s /dev/fd/3) || exit 0
  if [ "$cur" -ge "$2" ]; then end=$2; else end=$((cur - $3)); fi
  if [ "$end" -gt "$pos" ]; then
    head -c "$((end - pos))" <&3 || exit 0
    pos=$end
    n=0
  else
    n=$((n + 1))
    [ "$n" -gt "$4" ] && exit 0
    sleep "$5"
  fi
done | $hash
s=$(stat -L -c "%i %s %z" /dev/fd/3) && sleep 0.011 &&
  [ "$(stat -L -c "%i %s %z" /dev/fd/3)" = "$s" ] && printf '%s\n' "$s"
"""


@dataclass(frozen=True)
class Hashed:
    """What the follower read: the sha256 of the file's bytes, and the file's identity and
    ctime once it had read them (see the module; `verify_and_place(..., hashed=...)`)."""

    sha256: str
    stamp: str


class Follower:
    """Hashes `path` on the site, in a thread, while an upload of `size` bytes fills it."""

    def __init__(self, transport: Transport, path: str, size: int, reorder_bytes: int, *,
                 poll: float = POLL_SECONDS, stall: float = STALL_SECONDS) -> None:
        self.path = path
        self._out: list[str] = []
        polls = max(1, int(stall / poll))
        self._argv = ["sh", "-c", _FOLLOW_SCRIPT, "gridgate-follow", path, str(size),
                      str(reorder_bytes), str(polls), f"{poll:.3f}"]
        self._thread = threading.Thread(target=self._run, args=(transport,), daemon=True,
                                        name="gridgate-follow")
        self._thread.start()

    def _run(self, transport: Transport) -> None:
        try:
            self._out.append(site_fs.output(transport, self._argv,
                                            timeout=site_fs.HASH_TIMEOUT))
        except Exception as exc:  # any failure only means hashing after the upload
            log.info("could not hash %s while it arrived (%s); hashing it afterwards",
                     self.path, exc)

    def result(self, wait: float) -> Hashed | None:
        """What it read, once done (at most `wait` s from now); None if it could not."""
        self._thread.join(wait)
        if self._thread.is_alive() or not self._out:
            return None
        lines = self._out[0].splitlines()
        if len(lines) != 2:
            return None
        digest = lines[0].split(" ", 1)[0]
        return Hashed(digest, lines[1]) if site_fs.is_sha256(digest) else None
