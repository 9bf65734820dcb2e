"""IBM Spectrum LSF in the scheduler registry (adapters.registry)."""

from __future__ import annotations

from adapters.batch.entry import (
    ACCOUNTING_DIR,
    DialectOption,
    DialectSettings,
    SchedulerEntry,
)
from adapters.lsf.commands import LsfCommands
from adapters.lsf.dialect import LsfDialect

OPTIONS = (
    DialectOption(
        "memory_requests", "rusage memory requests",
        "Send a job's memory request as `-R rusage[mem=]` per slot (true by default; the "
        "site's LSF_UNIT_FOR_LIMITS must be MB)."),
    ACCOUNTING_DIR,
)


def _build(settings: DialectSettings) -> LsfDialect:
    return LsfDialect(settings.config, LsfCommands(**settings.commands),
                      memory=settings.flag("memory_requests", True),
                      accounting_dir=settings.text("accounting_dir"))


ENTRY = SchedulerEntry(
    kind="lsf",
    title=LsfDialect.title,
    commands=("bsub", "bjobs", "bkill", "bqueues", "bhosts"),
    build=_build,
    options=OPTIONS,
)
