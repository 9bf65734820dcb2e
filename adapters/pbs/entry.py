"""PBS Professional / OpenPBS in the scheduler registry (adapters.registry)."""

from __future__ import annotations

from adapters.batch.entry import (
    ACCOUNTING_DIR,
    SCRATCH_RESOURCE,
    DialectOption,
    DialectSettings,
    SchedulerEntry,
)
from adapters.pbs.commands import PbsCommands
from adapters.pbs.dialect import PbsDialect
from rules.text import TextRule

# qsub.1B -k: any of e, o (keep on the execution host) and d (write directly to the final
# path), or n (keep neither).
KEEP_FILES = TextRule("qsub -k value", r"n|[eod]{1,3}", "use e, o and d (e.g. oed), or n")

SERVER = TextRule("PBS server kind", r"pro|torque",
                  "use pro (PBS Professional / OpenPBS) or torque")

OPTIONS = (
    DialectOption(
        "pbs_server", "PBS server kinds",
        "pro (PBS Professional / OpenPBS, the default) or torque (TORQUE: nodes=N:ppn=P "
        "resources, qstat -x XML, completed jobs in state C).", SERVER),
    DialectOption(
        "keep_files", "qsub -k settings",
        "qsub -k value; default oed on PBS Professional / OpenPBS (output is written straight "
        "to the job directory, so it can be read while the job runs), none on TORQUE (output "
        "arrives when the job ends).", KEEP_FILES),
    SCRATCH_RESOURCE,
    ACCOUNTING_DIR,
)


def _build(settings: DialectSettings) -> PbsDialect:
    torque = settings.text("pbs_server") == "torque"
    return PbsDialect(settings.config, PbsCommands(**settings.commands),
                      keep_files=settings.text("keep_files", None if torque else "oed"),
                      accounting_dir=settings.text("accounting_dir"), torque=torque,
                      scratch_resource=settings.text("scratch_resource"))


ENTRY = SchedulerEntry(
    kind="pbs",
    title=PbsDialect.title,
    commands=("qsub", "qstat", "qdel", "qselect", "pbsnodes"),
    build=_build,
    options=OPTIONS,
)
