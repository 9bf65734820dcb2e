"""Usage records: how long one run of a job held how many cores, in the site's own words.

The gateway charges from these (never from its own clock: durations come only from the
site's timestamps or elapsed field). One record per run: a job the scheduler requeued
has one record per run, `run` counting from 0. Parsers are pure; each scheduler's lives
in its package (`adapters.<scheduler>.usage`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from adapters.base import NativeState
from adapters.reasons import Reason, StatusReason


@dataclass(frozen=True)
class UsageRecord:
    """One ended run of a job, as the scheduler's accounting recorded it."""

    native_id: str
    # 0 for the first run; a requeued job's later runs count up (Slurm's requeues,
    # Grid Engine's and PBS's reruns).
    run: int
    state: NativeState
    reason: StatusReason | None
    exit_code: int | None
    # The site's clock; None where the run never started.
    started_at: datetime | None
    ended_at: datetime | None
    # Wall-clock seconds the run held its cores (the scheduler's own elapsed figure where
    # it prints one, else end - start from its timestamps); 0 for a run that never ran.
    elapsed: int
    cores: int
    nodes: int
    # Which accounting said so: "sacct", "qacct", "pbs-accounting", "lsb.acct", "local".
    source: str
    # The record as received (one line or block), kept verbatim for audit.
    raw: str
    memory_mb: int | None = None
    gpus: int = 0

    @property
    def failed_at_start(self) -> bool:
        """The scheduler says the run never got going (Slurm BOOT_FAIL, a Grid Engine
        `failed` code from before the job script ran, PBS JOB_EXEC_FAIL*)."""
        return self.reason is not None and (
            self.reason == Reason.BOOT_FAIL or self.reason.startswith(Reason.FAILED_AT_START))

    @property
    def key(self) -> tuple[str, int]:
        """What makes a record unique at its site: applying it twice changes nothing."""
        return (self.native_id, self.run)
