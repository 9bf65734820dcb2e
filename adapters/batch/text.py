"""Reading what scheduler commands print: text, times, durations, and failures. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, tzinfo

from adapters.errors import AdapterError, SiteUnavailable, SubmitRejected
from adapters.transport import CommandResult, shown
from rules.text import DURATION

# Exit statuses a shell gives when it cannot run a program.
COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE = 127, 126
# Placeholders schedulers print for a time or value they do not have.
_NO_VALUE = frozenset({"", "n/a", "unknown", "none", "(null)", "-/-", "undefined", "--", "-"})
# Timestamp layouts printed without a zone, in the scheduler host's local time:
# ISO (Slurm, SGE qstat -xml), asctime (SGE qacct, PBS qstat), sge_ctime (Univa qacct).
_LOCAL_FORMATS = (
    "%Y-%m-%dT%H:%M:%S",
    "%a %b %d %H:%M:%S %Y",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M:%S.%f",
)
_UNLIMITED = frozenset({"infinite", "infinity", "unlimited"})


def text(data: bytes) -> str:
    """Command output as text; undecodable bytes never make a parser fail."""
    return data.decode("utf-8", "replace")


def lines(data: bytes) -> list[str]:
    """Non-empty, stripped lines."""
    return [line.strip() for line in text(data).splitlines() if line.strip()]


def message(result: CommandResult) -> str:
    """What the command said about its failure, on one line."""
    said = " ".join(lines(result.stderr)) or " ".join(lines(result.stdout))
    return said or f"exit status {result.exit_status}"


def no_value(value: str | None) -> bool:
    return value is None or value.strip().lower() in _NO_VALUE


def timestamp(value: str | None, tz: tzinfo) -> datetime | None:
    """A time from epoch seconds or a zone-less local layout, as an aware UTC datetime."""
    if no_value(value):
        return None
    assert value is not None
    raw = value.strip()
    if raw.isdigit():
        seconds = int(raw)
        return datetime.fromtimestamp(seconds, UTC) if seconds > 0 else None
    squeezed = " ".join(raw.split())
    for layout in _LOCAL_FORMATS:
        try:
            local = datetime.strptime(squeezed, layout)
        except ValueError:
            continue
        return local.replace(tzinfo=tz).astimezone(UTC)
    return None


def duration(value: str | None) -> int | None:
    """Seconds from `[D-][HH:]MM:SS` or plain seconds; None for unlimited or unknown."""
    if no_value(value):
        return None
    assert value is not None
    raw = value.strip()
    if raw.lower() in _UNLIMITED:
        return None
    if raw.isdigit():
        return int(raw)
    match = DURATION.fullmatch(raw)
    if not match:
        return None
    parts = {k: int(v) if v else 0 for k, v in match.groupdict().items()}
    return parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]


def integer(value: str | None) -> int | None:
    """An integer, or None for anything else (`N/A`, `infinite`, ...)."""
    if value is None:
        return None
    raw = value.strip()
    try:
        return int(raw)
    except ValueError:
        return None


def signal_exit(signal_number: int) -> int:
    """A shell's exit code for a process killed by a signal."""
    return 128 + signal_number


def command_missing(result: CommandResult) -> SiteUnavailable | None:
    """A site without the command (misconfigured binary path): the site is down for us."""
    if result.exit_status in (COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE):
        return SiteUnavailable(
            f"`{result.argv[0]}` cannot be run on the site (exit {result.exit_status}): "
            f"{message(result)}; check the scheduler's binary paths in the site config"
        )
    return None


def has_any(haystack: str, needles: Iterable[str]) -> bool:
    low = haystack.lower()
    return any(needle.lower() in low for needle in needles)


def query_failed(result: CommandResult) -> AdapterError:
    """A status, accounting, queue or cancel query that failed: try again later."""
    missing = command_missing(result)
    if missing is not None:
        return missing
    return SiteUnavailable(f"`{shown(result.argv)}` failed: {message(result)}")


def submit_failed(result: CommandResult, transient_markers: Iterable[str]) -> AdapterError:
    """A failed submission: a refusal (final, with the scheduler's own words) unless the
    message says the scheduler could not be reached."""
    missing = command_missing(result)
    if missing is not None:
        return missing
    said = message(result)
    if has_any(said, transient_markers):
        return SiteUnavailable(f"the scheduler did not take the job: {said}")
    return SubmitRejected(said)


def _id_order(native_id: str) -> tuple[int, str]:
    digits = re.match(r"\d+", native_id)
    return (int(digits.group()) if digits else -1, native_id)


def choose_job(found: Iterable[tuple[str, bool]]) -> str | None:
    """Of the jobs carrying one tag, `(id, is_final)`, the one to adopt: an unfinished one
    if any, else the newest. Two jobs with one tag mean a submission raced a recovery."""
    jobs = list(found)
    if not jobs:
        return None
    live = [native_id for native_id, final in jobs if not final]
    return max(live or [native_id for native_id, _ in jobs], key=_id_order)
