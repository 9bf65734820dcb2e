"""The scheduler registry: scheduler kind -> its `SchedulerEntry`. The only switch on kind.

Site config validation (which commands, options and MPI launchers a kind has), the JSON
Schema's list of kinds, and building a site's dialect all read this table; nothing else
in gateway/ or adapters/ names a scheduler kind. Adding a scheduler is one package under
adapters/ with an `entry` module, plus its recorded fixtures, and one line below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from adapters.batch.entry import DialectOption, DialectSettings, SchedulerEntry
from adapters.batch.types import SchedulerDialect
from adapters.errors import UnknownScheduler
from adapters.lsf.entry import ENTRY as LSF
from adapters.pbs.entry import ENTRY as PBS
from adapters.sge.entry import ENTRY as SGE
from adapters.slurm.entry import ENTRY as SLURM

SCHEDULERS: Mapping[str, SchedulerEntry] = MappingProxyType(
    {entry.kind: entry for entry in (SLURM, SGE, PBS, LSF)})


def kinds() -> tuple[str, ...]:
    """Every registered kind, in registration order."""
    return tuple(SCHEDULERS)


def entry(kind: str) -> SchedulerEntry:
    """The entry of `kind`; UnknownScheduler names the kinds there are."""
    found = SCHEDULERS.get(kind)
    if found is None:
        raise UnknownScheduler(f"no scheduler {kind!r} is registered; known: "
                               f"{', '.join(SCHEDULERS)}")
    return found


def dialect(kind: str, settings: DialectSettings) -> SchedulerDialect:
    """The dialect of `kind` for a site's settings."""
    return entry(kind).dialect(settings)


def options() -> dict[str, DialectOption]:
    """Every option any scheduler takes, by name (one name means one thing everywhere)."""
    found: dict[str, DialectOption] = {}
    for scheduler in SCHEDULERS.values():
        for option in scheduler.options:
            if found.setdefault(option.name, option) != option:
                raise ValueError(f"option {option.name!r} is declared twice, differently")
    return found


def offering_option(name: str) -> list[SchedulerEntry]:
    """The schedulers that take option `name`."""
    return [s for s in SCHEDULERS.values() if any(o.name == name for o in s.options)]


def offering_launcher(launcher: str) -> list[SchedulerEntry]:
    """The schedulers that provide MPI launcher `launcher` themselves (srun: Slurm)."""
    return [s for s in SCHEDULERS.values() if launcher in s.launchers]


def scheduler_launchers() -> frozenset[str]:
    """Every MPI launcher some scheduler provides itself."""
    return frozenset(launcher for s in SCHEDULERS.values() for launcher in s.launchers)
