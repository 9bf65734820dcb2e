"""The `scheduler:` section of a site config, read from the scheduler registry.

Which kinds exist, which commands each may relocate and which dialect options each takes
all come from `adapters.registry`: a new scheduler package brings its own options into
this schema (as fields of `scheduler:`) without an edit here. `local` is the gateway's
embedded site, not a scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import AfterValidator, Field, create_model, model_validator

from adapters import registry
from adapters.batch.entry import DialectOption, OptionValue, SchedulerEntry
from gateway.siteconfig.fields import (
    ArgvItem,
    CommandName,
    FieldIssues,
    Loc,
    QosName,
    SchedulerAccount,
    Section,
    TimeZone,
    named,
)
from gateway.siteconfig.keys import AbsolutePath, SafeText

# The embedded site: jobs run as processes on the gateway host, no scheduler.
LOCAL_KIND = "local"


def known_kinds() -> tuple[str, ...]:
    """Every kind a site config may name: the registered schedulers, then local."""
    return (*registry.kinds(), LOCAL_KIND)


def _check_kind(value: str) -> str:
    if value not in known_kinds():
        *first, last = (repr(k) for k in known_kinds())
        raise ValueError(f"{value!r} is not a scheduler the gateway speaks: use "
                         f"{', '.join(first)} or {last}")
    return value


def _titles(entries: list[SchedulerEntry]) -> str:
    return " or ".join(e.title for e in entries) or "no scheduler"


SchedulerKindName = Annotated[str, AfterValidator(_check_kind), Field(
    description=", ".join(f"{e.kind} ({e.title})" for e in registry.SCHEDULERS.values())
    + f" or {LOCAL_KIND} (processes on the gateway host).",
    json_schema_extra={"enum": list(known_kinds())})]


class SchedulerBase(Section):
    """Which batch system the site runs and where its commands are."""

    kind: SchedulerKindName
    version: SafeText | None = Field(
        default=None, description='Version, as text (quote it in YAML: "22.05.8").')
    bin_dir: AbsolutePath | None = Field(
        default=None, description="Directory of the scheduler commands; default: the PATH of "
                                  "the account's login shell.")
    binaries: dict[CommandName, AbsolutePath] = Field(
        default_factory=dict,
        description="Absolute path per command (e.g. sbatch: /opt/slurm/bin/sbatch); "
                    "overrides bin_dir for that command.")
    account: SchedulerAccount | None = Field(
        default=None, description="Scheduler account/project charged when a job names none "
                                  "(Slurm/PBS/SGE -A, LSF -P).")
    submit_args: list[ArgvItem] = Field(
        default_factory=list,
        description="Extra options on every submission, e.g. [--qos=gateway]. TRUSTED admin "
                    "input.")
    qos: list[QosName] = Field(
        default_factory=list,
        description="Qualities of service jobs may name (`qos:`; Slurm's --qos); a job naming "
                    "another goes elsewhere. Default: none (the account's own).")
    timezone: TimeZone = Field(
        default="UTC", description="IANA time zone of the times the scheduler prints without "
                                   "a zone (squeue, qstat), e.g. Europe/Berlin.")

    @model_validator(mode="after")
    def _fits_kind(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        entry = registry.SCHEDULERS.get(self.kind)
        known = entry.commands if entry is not None else ()
        for command in self.binaries:
            if command not in known:
                allowed = ", ".join(sorted(known)) or "none"
                issues.append((("binaries", command),
                               f"not a {self.kind} command: use one of {allowed}"))
        offered = {o.name for o in entry.options} if entry is not None else set()
        for name in self.options:
            if name not in offered:
                issues.append(((name,), f"only {_titles(registry.offering_option(name))} "
                                        f"{_has(name)} {registry.options()[name].what}: "
                                        f"remove it for a {self.kind} site"))
        if self.qos and not (entry is not None and entry.qos):
            takers = [e for e in registry.SCHEDULERS.values() if e.qos]
            issues.append((("qos",), f"only {_titles(takers)} jobs name a QOS: remove it for "
                                     f"a {self.kind} site"))
        if entry is None and (self.bin_dir or self.binaries):
            issues.append((("bin_dir",), "a local site has no scheduler commands: remove "
                                      "bin_dir and binaries"))
        if issues:
            raise FieldIssues(issues)
        return self

    @property
    def is_local(self) -> bool:
        """The embedded site (no scheduler, no SSH)."""
        return self.kind == LOCAL_KIND

    @property
    def options(self) -> dict[str, OptionValue]:
        """The dialect options this config sets (the registry's option fields)."""
        values = {name: getattr(self, name) for name in registry.options()}
        return {name: value for name, value in values.items() if value is not None}

    def text_option(self, name: str) -> str | None:
        """A text option's value, None when not set."""
        value = self.options.get(name)
        return value if isinstance(value, str) else None

    def command(self, name: str) -> str:
        """The path (or bare name, found on PATH) to run scheduler command `name`."""
        if name in self.binaries:
            return self.binaries[name]
        if self.bin_dir is not None:
            return f"{self.bin_dir.rstrip('/')}/{name}"
        return name

    def commands(self) -> dict[str, str]:
        """Every command of this kind, by name, with the path to run it."""
        entry = registry.SCHEDULERS.get(self.kind)
        return {name: self.command(name) for name in (entry.commands if entry else ())}

    def mpi_issues(self) -> list[tuple[Loc, str]]:
        """Options MPI jobs need on this kind and the config leaves out."""
        entry = registry.SCHEDULERS.get(self.kind)
        if entry is None:
            return []
        options: Mapping[str, OptionValue] = self.options
        return [((option.name,), f"required for MPI on {entry.title}: {option.mpi_hint}")
                for option in entry.options if option.mpi_hint and option.name not in options]


def _has(option: str) -> str:
    return "has" if len(registry.offering_option(option)) == 1 else "have"


def launcher_issue(kind: str, launcher: str) -> str | None:
    """Why a flavor may not use `launcher` on a `kind` site (None: it may)."""
    providers = registry.offering_launcher(launcher)
    if not providers or any(e.kind == kind for e in providers):
        return None
    return f"{launcher} needs a {_titles(providers)} site: use mpirun or mpiexec"


def _option_field(option: DialectOption) -> tuple[Any, Any]:
    kinds = _titles(registry.offering_option(option.name))
    description = f"{kinds} only. {option.description}"
    if option.rule is None:
        return (bool | None, Field(default=None, description=description))
    return (Annotated[str, *named(option.rule, option.rule.what)] | None,
            Field(default=None, description=description))


if TYPE_CHECKING:
    Scheduler = SchedulerBase
else:
    # One optional field per dialect option of the registry, so a misspelt option is an
    # unknown field and the JSON Schema documents every option.
    Scheduler = create_model(
        "Scheduler", __base__=SchedulerBase, __doc__=SchedulerBase.__doc__,
        **{name: _option_field(option) for name, option in registry.options().items()})
