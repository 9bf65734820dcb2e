"""The site configuration schema: one YAML file per site, validated strictly.

Every section forbids unknown fields, so a misspelt option is an error, not a silent
default. Cross-field rules (a Slurm site needs host keys, exactly one default partition,
`srun` only on Slurm, ...) report the field to fix and what to write there.

Trust: the site admin who writes this file is trusted. `mpi_flavors[].setup` lines are
shell that runs verbatim in every job's batch script on that site; user-supplied text
never goes there.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from adapters.text_rules import TextRule
from gateway.siteconfig.fields import (
    ArgvItem,
    CommandName,
    FieldIssues,
    FlavorName,
    GatewayUser,
    Host,
    Loc,
    LocalUser,
    PartitionName,
    PeName,
    Port,
    RuntimeName,
    SchedulerAccount,
    SetupLine,
    SiteName,
    TimeZone,
    Walltime,
)
from gateway.siteconfig.keys import (
    AbsolutePath,
    HostKeyLine,
    KeyRef,
    SafeText,
    check_unique_host_keys,
)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SchedulerKind(StrEnum):
    SLURM = "slurm"
    SGE = "sge"
    PBS = "pbs"
    LSF = "lsf"
    LOCAL = "local"


# Commands whose path `scheduler.binaries` may set, per scheduler.
SCHEDULER_COMMANDS: dict[SchedulerKind, frozenset[str]] = {
    SchedulerKind.SLURM: frozenset({"sbatch", "squeue", "sacct", "scancel", "sinfo",
                                    "scontrol", "srun"}),
    SchedulerKind.SGE: frozenset({"qsub", "qstat", "qacct", "qdel", "qconf", "qhost"}),
    SchedulerKind.PBS: frozenset({"qsub", "qstat", "qdel", "qmgr", "pbsnodes", "tracejob"}),
    SchedulerKind.LSF: frozenset({"bsub", "bjobs", "bkill", "bqueues", "bhosts", "bhist",
                                  "bacct"}),
    SchedulerKind.LOCAL: frozenset(),
}


class Scheduler(Section):
    """Which batch system the site runs and where its commands are."""

    kind: SchedulerKind = Field(description="slurm, sge (Grid Engine), pbs, lsf or local.")
    version: SafeText | None = Field(
        default=None, description='Version, as text (quote it in YAML: "22.05.8").')
    bin_dir: AbsolutePath | None = Field(
        default=None, description="Directory of the scheduler commands; default: the PATH of "
                                  "the account's login shell.")
    binaries: dict[CommandName, AbsolutePath] = Field(
        default_factory=dict,
        description="Absolute path per command (e.g. sbatch: /opt/slurm/bin/sbatch); "
                    "overrides bin_dir for that command.")
    parallel_environment: PeName | None = Field(
        default=None, description="Grid Engine only: the parallel environment for MPI jobs.")
    account: SchedulerAccount | None = Field(
        default=None, description="Scheduler account/project charged when a job names none "
                                  "(Slurm/PBS/SGE -A, LSF -P).")
    submit_args: list[ArgvItem] = Field(
        default_factory=list,
        description="Extra options on every submission, e.g. [--qos=gateway]. TRUSTED admin "
                    "input.")
    timezone: TimeZone = Field(
        default="UTC", description="IANA time zone of the times the scheduler prints without "
                                   "a zone (squeue, qstat), e.g. Europe/Berlin.")

    @model_validator(mode="after")
    def _fits_kind(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        known = SCHEDULER_COMMANDS[self.kind]
        for command in self.binaries:
            if command not in known:
                allowed = ", ".join(sorted(known)) or "none"
                issues.append((("binaries", command),
                               f"not a {self.kind.value} command: use one of {allowed}"))
        if self.parallel_environment is not None and self.kind != SchedulerKind.SGE:
            issues.append((("parallel_environment",),
                           f"only Grid Engine has parallel environments: remove it for a "
                           f"{self.kind.value} site"))
        if self.kind == SchedulerKind.LOCAL and (self.bin_dir or self.binaries):
            issues.append((("bin_dir",), "a local site has no scheduler commands: remove "
                                      "bin_dir and binaries"))
        if issues:
            raise FieldIssues(issues)
        return self

    def command(self, name: str) -> str:
        """The path (or bare name, found on PATH) to run scheduler command `name`."""
        if name in self.binaries:
            return self.binaries[name]
        if self.bin_dir is not None:
            return f"{self.bin_dir.rstrip('/')}/{name}"
        return name


Timeout = Annotated[float, Field(gt=0, le=86_400)]


class JumpHost(Section):
    """A bastion the gateway connects through (like `ssh -J user@jump`)."""

    host: Host
    port: Port = 22
    user: LocalUser = Field(description="The account on the jump host.")
    key: KeyRef = Field(description="Private key for the jump host account.")
    host_keys: Annotated[list[HostKeyLine], AfterValidator(check_unique_host_keys)] = Field(
        default_factory=list, description="The jump host's pinned OpenSSH public host keys.")


class Ssh(Section):
    """How the gateway reaches the site's login node. Host keys are always pinned."""

    host: Host
    port: Port = 22
    host_keys: Annotated[list[HostKeyLine], AfterValidator(check_unique_host_keys)] = Field(
        default_factory=list,
        description="The login node's OpenSSH public host keys (lines of its "
                    "/etc/ssh/ssh_host_*_key.pub). Any other key is refused.")
    jump_host: JumpHost | None = None
    connect_timeout_seconds: Timeout = Field(
        default=10.0, description="Limit on TCP connect + SSH handshake + authentication.")
    command_timeout_seconds: Timeout = Field(
        default=60.0, description="Limit on any one remote command.")


class AccountMode(StrEnum):
    COMMUNITY = "community"
    MAPPED = "mapped"


class Account(Section):
    """A Unix account on the site and the private key the gateway logs in with."""

    user: LocalUser
    key: KeyRef


class Accounts(Section):
    """Whose account runs a gateway user's jobs at this site."""

    mode: AccountMode = Field(
        description="community: one account runs everyone's jobs (the gateway isolates "
                    "them); mapped: each gateway user has their own account.")
    community: Account | None = Field(default=None, description="The account in community "
                                                                 "mode.")
    mapped: dict[GatewayUser, Account] = Field(
        default_factory=dict,
        description="mapped mode: gateway username -> account. Unmapped users cannot use "
                    "the site.")

    @model_validator(mode="after")
    def _fits_mode(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        if self.mode == AccountMode.COMMUNITY:
            if self.community is None:
                issues.append((("community",), "required in community mode: give `user` and "
                                            "`key`"))
            if self.mapped:
                issues.append((("mapped",), "only used in mapped mode: remove it, or set "
                                         "`mode: mapped`"))
        else:
            if not self.mapped:
                issues.append((("mapped",), "mapped mode needs at least one entry "
                                         "`<gateway user>: {user: ..., key: ...}`"))
            if self.community is not None:
                issues.append((("community",), "only used in community mode: remove it, or "
                                            "set `mode: community`"))
            owners: dict[str, str] = {}
            for gateway_user, account in self.mapped.items():
                if account.user in owners:
                    issues.append((("mapped", gateway_user, "user"),
                                   f"account {account.user!r} is already mapped to "
                                   f"{owners[account.user]!r}: each gateway user needs an "
                                   "account of their own (or use community mode)"))
                owners.setdefault(account.user, gateway_user)
        if issues:
            raise FieldIssues(issues)
        return self

    def account_for(self, gateway_user: str) -> Account | None:
        """The account that runs `gateway_user`'s jobs, or None if they have none here."""
        if self.mode == AccountMode.COMMUNITY:
            return self.community
        return self.mapped.get(gateway_user)


class Partition(Section):
    """One partition (Slurm) or queue (Grid Engine, PBS, LSF) and its limits."""

    name: PartitionName
    default: bool = Field(default=False, description="The partition jobs go to when they "
                                                     "name none (exactly one).")
    max_nodes: int = Field(ge=1, description="Most nodes one job may use.")
    nodes: int | None = Field(default=None, ge=1,
                              description="How many nodes the partition has in all.")
    max_walltime: Walltime
    cores_per_node: int = Field(ge=1, description="Cores (CPUs) of one node.")
    memory_mb_per_node: int = Field(ge=1, description="Memory of one node usable by jobs, "
                                                      "in MiB.")

    @model_validator(mode="after")
    def _nodes_cover_max(self) -> Self:
        if self.nodes is not None and self.max_nodes > self.nodes:
            raise FieldIssues([(("max_nodes",), f"{self.max_nodes} is more than the partition's "
                                             f"{self.nodes} nodes: lower it or raise `nodes`")])
        return self


def _one_default(partitions: list[Partition]) -> list[Partition]:
    names = [p.name for p in partitions]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"partition {dupes[0]!r} is listed twice: give each partition once")
    defaults = [p.name for p in partitions if p.default]
    if len(defaults) != 1:
        if not defaults:
            raise ValueError("no default partition: set `default: true` on exactly one "
                             "partition")
        raise ValueError(f"{len(defaults)} default partitions ({', '.join(defaults)}): keep "
                         "`default: true` on exactly one")
    return partitions


class Interconnect(Section):
    """A network between compute nodes and what MPI achieves over it."""

    name: SafeText = Field(min_length=1, max_length=100,
                           description="e.g. Myrinet, Fast Ethernet, InfiniBand HDR.")
    latency_us: float = Field(gt=0, description="Small-message one-way latency, microseconds.")
    bandwidth_mbs: float = Field(gt=0, description="Large-message bandwidth, MB/s.")
    note: SafeText | None = Field(default=None, description="How the figures were obtained.")


class MpiLauncherKind(StrEnum):
    MPIRUN = "mpirun"
    SRUN = "srun"
    MPIEXEC = "mpiexec"


SRUN_MPI_PLUGIN = TextRule("srun MPI plugin name", r"[a-z0-9_]{1,32}",
                           "see `srun --mpi=list`, e.g. pmi2")


class MpiFlavor(Section):
    """An MPI implementation jobs can ask for, and the launchers that start it.

    A job names the flavor (`mpi.flavor`) and a launcher (`mpi.launcher`): `mpirun` is the
    library's own launcher (`command` below; `mpiexec` counts as one), `srun` is Slurm's.
    """

    name: FlavorName
    launchers: list[MpiLauncherKind] = Field(
        min_length=1, description="How this flavor can be started: mpirun, mpiexec (the "
                                  "library's launcher) and/or srun (Slurm's).")
    command: list[ArgvItem] = Field(
        default_factory=list,
        description="The library's launcher as argv, e.g. [mpirun.openmpi]; `-n <ranks>` "
                    "and the program follow. Default: [mpirun] or [mpiexec].")
    ranks_per_node_args: list[ArgvItem] = Field(
        default_factory=list,
        description="Arguments of the library's launcher that place {n} ranks per node, e.g. "
                    "[-ppn, '{n}'] (MPICH) or [--map-by, 'ppr:{n}:node'] (Open MPI).")
    srun_mpi: str | None = Field(
        default=None, description="With srun: the `srun --mpi=` plugin, e.g. pmi2 (MPICH) "
                                  "or pmix (Open MPI).",
        json_schema_extra={"pattern": SRUN_MPI_PLUGIN.json_pattern})
    setup: list[SetupLine] = Field(
        default_factory=list,
        description="Shell lines run before launching (e.g. `module load mpich`). TRUSTED "
                    "admin input, copied verbatim into job scripts.")

    @model_validator(mode="after")
    def _fits_launchers(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        launchers = self.launchers
        dupes = sorted({x.value for x in launchers if launchers.count(x) > 1})
        if dupes:
            issues.append((("launchers",), f"{dupes[0]} is listed twice: keep one"))
        own = self.library_launcher
        if own is None and self.command:
            issues.append((("command",), "only used with launcher mpirun or mpiexec: remove "
                                         "it or add one of them to `launchers`"))
        if own is None and self.ranks_per_node_args:
            issues.append((("ranks_per_node_args",), "only used with launcher mpirun or "
                                                     "mpiexec: remove it"))
        if self.ranks_per_node_args and not any("{n}" in a for a in self.ranks_per_node_args):
            issues.append((("ranks_per_node_args",), "write {n} where the number of ranks per "
                                                     "node goes, e.g. [-ppn, '{n}']"))
        if self.srun_mpi is not None:
            if MpiLauncherKind.SRUN not in launchers:
                issues.append((("srun_mpi",), "only used with launcher srun: remove it or add "
                                              "srun to `launchers`"))
            if not SRUN_MPI_PLUGIN.matches(self.srun_mpi):
                issues.append((("srun_mpi",), f"{self.srun_mpi!r} is not an srun MPI plugin "
                                              "name (see `srun --mpi=list`), e.g. pmi2"))
        if issues:
            raise FieldIssues(issues)
        return self

    @property
    def library_launcher(self) -> MpiLauncherKind | None:
        """mpirun or mpiexec, whichever this flavor lists first; None if only srun."""
        return next((x for x in self.launchers if x != MpiLauncherKind.SRUN), None)

    @property
    def argv(self) -> list[str]:
        """The library's launcher as argv (before `-n <ranks>` and the program)."""
        own = self.library_launcher
        return list(self.command) or ([own.value] if own is not None else [])


class SiteState(StrEnum):
    ENABLED = "enabled"
    DRAINED = "drained"


class SiteConfig(Section):
    """One site: a cluster behind one login node, as its admin describes it."""

    name: SiteName
    description: SafeText = Field(min_length=1, max_length=500)
    location: SafeText = Field(min_length=1, max_length=200,
                               description="Where the cluster is (institution, city).")
    descriptive: bool = Field(
        default=False,
        description="True for a cluster described for models and documentation only: the "
                    "gateway never connects to it (ssh, accounts, scratch_root optional; "
                    "state must be drained).")
    provisioned_by: Literal["testbed"] | None = Field(
        default=None,
        description="A template completed by a provisioner: `gridgate testbed up` fills in "
                    "ssh.host, ssh.host_keys and account keys and writes the completed copy "
                    "to its state directory. Host keys may be empty here.")
    scheduler: Scheduler
    ssh: Ssh | None = None
    accounts: Accounts | None = None
    partitions: Annotated[list[Partition], AfterValidator(_one_default)] = Field(min_length=1)
    interconnect: Interconnect = Field(description="The network MPI uses between nodes.")
    other_interconnects: list[Interconnect] = Field(
        default_factory=list, description="Further networks (e.g. the Ethernet beside a "
                                          "Myrinet), for models and documentation.")
    mpi_flavors: list[MpiFlavor] = Field(
        default_factory=list, description="MPI implementations, one entry each; jobs that "
                                          "ask for MPI without a flavor get the first.")
    job_setup: list[SetupLine] = Field(
        default_factory=list,
        description="Shell lines at the top of every job script here (e.g. `module purge`). "
                    "TRUSTED admin input, copied verbatim.")
    container_runtimes: list[RuntimeName] = Field(default_factory=list)
    scratch_root: AbsolutePath | None = Field(
        default=None, description="Directory on the site under which the gateway makes one "
                                  "0700 directory per job.")
    charge_factor: float = Field(default=1.0, gt=0, description="Service units per core-hour "
                                                                "here, relative to 1.0.")
    max_concurrent_jobs: int = Field(default=64, ge=1, description="Most gateway jobs queued "
                                                                   "or running here at once.")
    state: SiteState = Field(default=SiteState.ENABLED,
                             description="enabled, or drained (takes no new jobs).")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        issues = [*self._reachability_issues(), *self._mpi_issues(), *self._list_issues()]
        if issues:
            raise FieldIssues(issues)
        return self

    def _reachability_issues(self) -> list[tuple[Loc, str]]:
        kind = self.scheduler.kind.value
        issues: list[tuple[Loc, str]] = []
        if self.descriptive:
            if self.state != SiteState.DRAINED:
                issues.append((("state",), "a descriptive site is never used: set `state: "
                                        "drained`"))
            if self.provisioned_by is not None:
                issues.append((("provisioned_by",), "a descriptive site is never provisioned: "
                                                 "remove it"))
            return issues
        if not self.is_remote:
            if self.ssh is not None:
                issues.append((("ssh",), "a local site runs on the gateway host: remove ssh"))
            if self.accounts is not None:
                issues.append((("accounts",), "a local site runs as the gateway: remove "
                                           "accounts"))
            return issues
        if self.ssh is None:
            issues.append((("ssh",), f"required for a {kind} site: give host, port and "
                                  "host_keys"))
        elif self.provisioned_by is None:
            if not self.ssh.host_keys:
                issues.append((("ssh", "host_keys"), self._host_key_advice()))
            jump = self.ssh.jump_host
            if jump is not None and not jump.host_keys:
                issues.append((("ssh", "jump_host", "host_keys"),
                               "required: pin the jump host's public host key(s) (lines of "
                               "its /etc/ssh/ssh_host_*_key.pub)"))
        if self.accounts is None:
            issues.append((("accounts",), f"required for a {kind} site: `mode: community` with "
                                       "`community: {user, key}`, or `mode: mapped`"))
        if self.scratch_root is None:
            issues.append((("scratch_root",), "required: the absolute directory on the site "
                                           "where job directories are made"))
        return issues

    def _host_key_advice(self) -> str:
        return ("required and non-empty: pin the login node's public host key(s): copy the "
                "lines of its /etc/ssh/ssh_host_ed25519_key.pub (check the fingerprint with "
                "the site's admins; never trust ssh-keyscan alone)")

    def _mpi_issues(self) -> list[tuple[Loc, str]]:
        issues: list[tuple[Loc, str]] = []
        names = [flavor.name for flavor in self.mpi_flavors]
        for i, flavor in enumerate(self.mpi_flavors):
            if names.index(flavor.name) != i:
                issues.append((("mpi_flavors", i, "name"),
                               f"{flavor.name!r} is listed twice: one entry per flavor, with "
                               "all its launchers"))
            if MpiLauncherKind.SRUN in flavor.launchers and \
                    self.scheduler.kind != SchedulerKind.SLURM:
                issues.append((("mpi_flavors", i, "launchers"),
                               "srun needs a Slurm site: use mpirun or mpiexec"))
        if (self.scheduler.kind == SchedulerKind.SGE and self.mpi_flavors
                and self.scheduler.parallel_environment is None):
            issues.append((("scheduler", "parallel_environment"),
                           "required for MPI on Grid Engine: name the parallel environment "
                           "(see `qconf -spl`), e.g. mpi"))
        return issues

    def _list_issues(self) -> list[tuple[Loc, str]]:
        issues: list[tuple[Loc, str]] = []
        nets = [self.interconnect.name, *(n.name for n in self.other_interconnects)]
        for i, net in enumerate(self.other_interconnects):
            if nets.count(net.name) > 1:
                issues.append((("other_interconnects", i, "name"),
                               f"{net.name!r} is listed twice: name each network once"))
        runtimes = self.container_runtimes
        for runtime in sorted({r for r in runtimes if runtimes.count(r) > 1}):
            issues.append((("container_runtimes",), f"{runtime!r} is listed twice: keep one"))
        return issues

    @property
    def is_remote(self) -> bool:
        """Reached over SSH (every kind but local)."""
        return self.scheduler.kind != SchedulerKind.LOCAL

    @property
    def is_complete(self) -> bool:
        """Ready to connect to: not descriptive, and every SSH pin present."""
        if self.descriptive:
            return False
        if not self.is_remote:
            return True
        ssh = self.ssh
        return ssh is not None and bool(ssh.host_keys) and (
            ssh.jump_host is None or bool(ssh.jump_host.host_keys))

    @property
    def default_partition(self) -> Partition:
        return next(p for p in self.partitions if p.default)

    def partition(self, name: str | None) -> Partition | None:
        """The named partition (the default one for None), or None if there is none."""
        if name is None:
            return self.default_partition
        return next((p for p in self.partitions if p.name == name), None)
