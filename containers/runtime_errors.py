"""Why a container runtime could not start the program, from what it wrote on stderr.

- Apptainer and SingularityCE log through sylog: `FATAL:   MESSAGE` (the level and its
  colon padded to 8 characters, then a space), wrapped in ANSI colour codes even when
  stderr is a file, unless APPTAINER_MESSAGELEVEL or --nocolor turn them off. The first
  FATAL line is the cause (a runtime stops at it; each MPI rank may print its own).
- ch-run (Charliecloud): `ch-run[PID]: error: MESSAGE (FILE.c:LINE[ ERRNO])`, written in
  several write(2) calls, so the ranks of one job sharing a stderr file interleave them
  mid-line ("...not-in-the-imagech-run[163]: error: ...", seen on the testbed): the text is
  cut before each `ch-run[PID]: ` too, and a message ending in its source location (whole)
  is preferred to one cut short. The four writes are `ch-run[PID]: `, `error: `, the
  message, and `: STRERROR (FILE.c:LINE ERRNO)`; when every rank's tail was split from
  its head (seen once in 2 ranks), only cut-short messages are left. Each rank stops at
  its first error, so when the stderr holds exactly one such tail, it is theirs and its
  STRERROR completes the message. A rank that joins its peers' container (`--join`) and
  finds their first rank already gone says `join: no PID N: ...`: that is the other rank's
  failure seen from outside, so any other message is the cause before it. When rank A
  wrote its header and `error: `, then rank B its own, A's message lands glued before B's
  on B's line (`MSGMSG: STRERROR`); ranks fail alike, so a message that is one text
  repeated is that text once.

`runtime_failure` gives the first such message, without colour codes, source location or
other control characters, at most MAX_CHARS long; None when no line has either form. The
text is the job's own output, so it is only ever shown to the job's owner, as data.
"""

from __future__ import annotations

import re

MAX_CHARS = 300
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SYLOG_FATAL = re.compile(r"FATAL: {3}(?P<message>\S.*)")
_CH_RUN_ERROR = re.compile(r"ch-run\[\d+\]: error: (?P<message>.+?)"
                           r"(?P<where> \([\w.-]+\.c:\d+(?: \d+)?\))?")
_PIECES = re.compile(r"\r?\n|(?=ch-run\[\d+\]: )")
_CH_RUN_PEER_GONE = re.compile(r"join: no PID \d+: ")
_REPEATED = re.compile(r"(?P<text>.+?)(?P=text)+(?P<error>: [^:]+)?")
_CH_RUN_ERRNO_TAIL = re.compile(r": (?P<error>[^:\n()]+) \([\w.-]+\.c:\d+ \d+\)")


def _clean(message: str) -> str:
    message = _CONTROL.sub("", message).strip()
    return message if len(message) <= MAX_CHARS else message[:MAX_CHARS - 3] + "..."


def _ch_run(message: str) -> str:
    if repeated := _REPEATED.fullmatch(message):
        message = repeated["text"] + (repeated["error"] or "")
    return _clean(f"ch-run: {message}")


def runtime_failure(stderr: str) -> str | None:
    """The runtime's own words for why it stopped, if `stderr` holds them (see module)."""
    cut_short = peer_gone = None
    stderr = _ANSI.sub("", stderr)
    for piece in _PIECES.split(stderr):
        line = piece.rstrip()
        if match := _SYLOG_FATAL.fullmatch(line):
            return _clean(match["message"])
        if match := _CH_RUN_ERROR.fullmatch(line):
            if _CH_RUN_PEER_GONE.match(match["message"]):
                peer_gone = peer_gone or match["message"]
            elif match["where"]:
                return _ch_run(match["message"])
            else:
                cut_short = cut_short or match["message"]
    if cut_short is None:
        return None if peer_gone is None else _ch_run(peer_gone)
    tails = {tail.group(): tail["error"] for tail in _CH_RUN_ERRNO_TAIL.finditer(stderr)}
    if len(tails) == 1:
        cut_short += f": {tails.popitem()[1]}"
    return _ch_run(cut_short)
