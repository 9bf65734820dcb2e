"""LSF's job log lsb.acct: usage records from JOB_FINISH records. Pure.

Format: IBM Spectrum LSF 10.1 lsb.acct(5)
(https://www.ibm.com/docs/en/SSWRJV_10.1.0/lsf_config_ref/lsb.acct.5.html): one record per
line, fields separated by blanks, strings in double quotes (an embedded quote doubled),
"" for a string and 0 for a time LSF does not have. JOB_FINISH fields in order (the same
order OpenLava's lsbatch/lib/lsb.log.c readJobFinish reads): "JOB_FINISH" version
eventTime (the job's end) jobId userId options numProcessors submitTime beginTime termTime
startTime userName queue resReq dependCond preExecCmd fromHost cwd inFile outFile errFile
jobFile numAskedHosts askedHosts... numExHosts execHosts... jStatus hostFactor jobName
command, 19 lsfRusage numbers, mailUser projectName exitStatus maxNumProcessors, then
fields this parser does not need but idx, the index of an array element (0 for a job
that is not one: its record is then `JOBID[idx]`), four fields after exitStatus
(maxNumProcessors loginShell timeEvent idx). execHosts names one host per slot, or with
LSF_HPC_EXTENSIONS=SHORT_EVENTFILE `"4*hostA"` for four slots (Platform LSF Reference 6.2,
lsf.conf). jStatus is 64 (JOB_STAT_DONE) or 32 (JOB_STAT_EXIT); exitStatus is the job's
UNIX wait status (exit code times 256, or the signal that killed it). A job LSF ran more
than once (requeued) has a JOB_FINISH record per run, in the order mbatchd appended them.
The file is LSB_SHAREDIR/<cluster>/logdir/lsb.acct (archived as lsb.acct.N).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from adapters.base import NativeState
from adapters.batch.text import integer, query_failed, signal_exit, text
from adapters.lsf.commands import LsfCommands
from adapters.reasons import Reason, StatusReason, because
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

_TOKEN = re.compile(r'"((?:[^"]|"")*)"|(\S+)')
# A job id, or an array element's (`123[4]`: the element's record is its job's with `idx`).
_ID = re.compile(r"([0-9]+)(?:\[[0-9]+\])?")
JOB_STAT_EXIT, JOB_STAT_DONE = 0x20, 0x40
# Positions of the fixed fields before the host lists.
_EVENT_TIME, _JOB_ID, _NUM_PROCESSORS, _START_TIME, _NUM_ASKED_HOSTS = 2, 3, 6, 10, 22
_RUSAGE_FIELDS = 19
# grep: exit 1 means "no line matched".
_NO_MATCH = 1


def usage_command(
    commands: LsfCommands, native_ids: Sequence[str], accounting_dir: str
) -> tuple[str, ...] | None:
    """The JOB_FINISH records of these jobs in lsb.acct and its archives (an array
    element's among its array's); None when no id is one LSF issues."""
    ids = list(dict.fromkeys(m.group(1) for i in native_ids if (m := _ID.fullmatch(i))))
    if not ids:
        return None
    pattern = f'^"JOB_FINISH" "[^"]*" [0-9]+ ({"|".join(ids)}) '
    return (commands.grep, "-h", "-r", "-E", "--include=lsb.acct*", "-e", pattern, "--",
            accounting_dir)


def parse_usage(result: CommandResult) -> list[UsageRecord]:
    """A record for each JOB_FINISH line; malformed lines are skipped."""
    if result.exit_status == _NO_MATCH and not result.stdout:
        return []
    if result.exit_status != 0:
        raise query_failed(result)
    found: list[tuple[int, UsageRecord]] = []
    for line in text(result.stdout).splitlines():
        try:
            found.append(_record(line.strip()))
        except (IndexError, ValueError):
            continue
    found.sort(key=lambda item: item[0])
    runs: dict[str, int] = {}
    records = []
    for _, record in found:
        run = runs.get(record.native_id, 0)
        runs[record.native_id] = run + 1
        records.append(replace(record, run=run))
    return records


def tokens(line: str) -> list[str]:
    """The fields of one record, quoted strings unquoted."""
    return [m.group(2) if m.group(2) is not None else m.group(1).replace('""', '"')
            for m in _TOKEN.finditer(line)]


def _record(line: str) -> tuple[int, UsageRecord]:
    """(end time, the record with run 0) of one JOB_FINISH line."""
    fields = tokens(line)
    if not fields or fields[0] != "JOB_FINISH":
        raise ValueError("not a JOB_FINISH record")
    at = _NUM_ASKED_HOSTS + 1 + int(fields[_NUM_ASKED_HOSTS])
    exec_hosts = fields[at + 1:at + 1 + int(fields[at])]
    at += 1 + len(exec_hosts)
    status = int(fields[at])
    # jStatus, hostFactor, jobName, command, lsfRusage..., mailUser, projectName.
    exit_at = at + 4 + _RUSAGE_FIELDS + 2
    exit_status = int(fields[exit_at])
    # exitStatus, maxNumProcessors, loginShell, timeEvent, idx: an array element's index.
    index = integer(fields[exit_at + 4]) if len(fields) > exit_at + 4 else None
    ended_epoch = int(fields[_EVENT_TIME])
    start_epoch = int(fields[_START_TIME])
    started = datetime.fromtimestamp(start_epoch, UTC) if start_epoch > 0 else None
    state, reason, code = _ended(status, exit_status, started is not None)
    slots = [_slots(host) for host in exec_hosts]
    ran = started is not None
    return ended_epoch, UsageRecord(
        native_id=f"{fields[_JOB_ID]}[{index}]" if index else fields[_JOB_ID],
        run=0,
        state=state,
        reason=reason,
        exit_code=code,
        started_at=started,
        ended_at=datetime.fromtimestamp(ended_epoch, UTC),
        elapsed=max(ended_epoch - start_epoch, 0) if ran else 0,
        cores=(sum(n for n, _ in slots) or integer(fields[_NUM_PROCESSORS]) or 1) if ran else 0,
        nodes=(len({host for _, host in slots}) or 1) if ran else 0,
        source="lsb.acct",
        raw=line,
    )


def _slots(entry: str) -> tuple[int, str]:
    """(slots, host) of one execHosts entry: `hostA` or `4*hostA`."""
    count, star, host = entry.partition("*")
    return (int(count), host) if star and count.isdigit() else (1, entry)


def _ended(
    status: int, exit_status: int, started: bool
) -> tuple[NativeState, StatusReason | None, int | None]:
    """State, reason and shell exit code from jStatus and the wait status."""
    if status & JOB_STAT_DONE:
        return NativeState.COMPLETED, None, 0
    if not started:
        # Killed before it was dispatched (bkill of a pending job).
        return NativeState.CANCELLED, Reason.CANCELLED_BEFORE_START, None
    signal = exit_status & 0x7F
    if signal:
        killed = because(Reason.KILLED_BY_SIGNAL, signal, " ")
        return NativeState.FAILED, killed, signal_exit(signal)
    return NativeState.FAILED, Reason.NON_ZERO_EXIT, exit_status >> 8
