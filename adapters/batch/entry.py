"""What a scheduler package tells the registry about itself: plain data, no I/O.

Each scheduler package (adapters/slurm, adapters/pbs, ...) declares one `SchedulerEntry`
in its `entry` module: the commands a site config may relocate, the settings its dialect
takes from the site config, the MPI launchers the scheduler itself provides, and how to
build its dialect. `adapters.registry` collects the entries; the gateway validates site
configs and builds adapters from them and never names a scheduler itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from adapters.batch.types import DialectConfig, SchedulerDialect
from rules.text import TextRule

OptionValue = str | bool


@dataclass(frozen=True)
class DialectOption:
    """A setting of one scheduler's dialect, written under `scheduler:` in a site config.

    `rule`: the form of a text value; None makes the option a yes/no flag. `what` names
    the thing in the plural for messages ("only Grid Engine has parallel environments").
    `mpi_hint`: set when MPI jobs need this option; says what to write.
    """

    name: str
    what: str
    description: str
    rule: TextRule | None = None
    mpi_hint: str | None = None


# Options several schedulers take: one option, so one meaning everywhere.
# The consumable node-local scratch is asked with (Grid Engine, PBS).
SCRATCH_RESOURCE = DialectOption(
    "scratch_resource", "scratch resources",
    "The resource a job's node-local scratch request is sent as, where the scheduler has "
    "none built in: a per-slot consumable complex on Grid Engine (`-l NAME=...M`, e.g. "
    "tmpfree), a host-level resource in each `select` chunk on PBS Professional "
    "(`:NAME=...mb`); default: none is sent.",
    TextRule("resource name", r"[A-Za-z_][A-Za-z0-9_]{0,63}",
             "use the resource's name as the scheduler knows it, e.g. tmpfree"))
# An accounting log directory on the site (PBS, LSF).
ACCOUNTING_DIR = DialectOption(
    "accounting_dir", "accounting log directories",
    "The directory of the scheduler's accounting logs, if the gateway's account may read "
    "it: PBS_HOME/server_priv/accounting on PBS (E, R and D records: how jobs `qstat -x` "
    "no longer lists ended, and each run's usage), LSB_SHAREDIR/<cluster>/logdir on LSF "
    "(lsb.acct: each run's usage).",
    TextRule("absolute directory", r"/[A-Za-z0-9._+/-]*",
             "use an absolute path such as /var/spool/pbs/server_priv/accounting"))


@dataclass(frozen=True)
class DialectSettings:
    """A site's choices for one dialect: its config, command paths and options."""

    config: DialectConfig = field(default_factory=DialectConfig)
    # Command name -> the path (or bare name) to run; names not given keep their default.
    commands: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, OptionValue] = field(default_factory=dict)

    def text(self, name: str, default: str | None = None) -> str | None:
        """A text option, or `default` when the site config does not set it."""
        value = self.options.get(name)
        return value if isinstance(value, str) else default

    def flag(self, name: str, default: bool) -> bool:
        """A yes/no option, or `default` when the site config does not set it."""
        value = self.options.get(name)
        return value if isinstance(value, bool) else default


@dataclass(frozen=True)
class SchedulerEntry:
    """One scheduler kind: everything the gateway needs to configure and drive it."""

    kind: str
    # The name people know it by, for messages ("Grid Engine").
    title: str
    # Client commands whose path a site config may set (`bin_dir`, `binaries`).
    commands: tuple[str, ...]
    build: Callable[[DialectSettings], SchedulerDialect]
    options: tuple[DialectOption, ...] = ()
    # MPI launchers the scheduler itself provides (Slurm's srun), besides the library's own.
    launchers: frozenset[str] = frozenset()
    # Whether a job may name a quality of service (Slurm's --qos).
    qos: bool = False

    def dialect(self, settings: DialectSettings) -> SchedulerDialect:
        """The dialect for a site; only this entry's commands and options reach it."""
        unknown = sorted(set(settings.commands) - set(self.commands))
        unknown += sorted(set(settings.options) - {o.name for o in self.options})
        if unknown:
            raise ValueError(f"not {self.kind} settings: {', '.join(unknown)}")
        return self.build(settings)
