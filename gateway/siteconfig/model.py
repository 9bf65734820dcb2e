"""The site configuration schema: one YAML file per site, validated strictly.

Every section forbids unknown fields, so a misspelt option is an error, not a silent
default. Cross-field rules (a remote site needs host keys, exactly one default partition,
`srun` only where the scheduler provides it, ...) report the field to fix and what to
write there. The sections live beside this module by concept: `scheduler` (read from the
scheduler registry), `access` (SSH and accounts), `cluster` (partitions, networks, MPI),
`containers` (runtimes and what container jobs find).

Trust: the site admin who writes this file is trusted. `mpi_flavors[].setup` lines are
shell that runs verbatim in every job's batch script on that site; user-supplied text
never goes there.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, model_validator

from containers.site_caps import SiteContainerCaps
from gateway.siteconfig.access import Accounts, Ssh
from gateway.siteconfig.charging import SiteCharging
from gateway.siteconfig.cluster import (
    Interconnect,
    MpiFlavor,
    Partition,
    one_default,
)
from gateway.siteconfig.containers import SiteContainers, caps, container_issues
from gateway.siteconfig.fields import FieldIssues, Loc, Section, SetupLine, SiteName
from gateway.siteconfig.keys import AbsolutePath, SafeText
from gateway.siteconfig.routing import SiteRouting
from gateway.siteconfig.scheduler import Scheduler, launcher_issue


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
    partitions: Annotated[list[Partition], AfterValidator(one_default)] = Field(min_length=1)
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
    containers: SiteContainers = Field(default_factory=SiteContainers, description=(
        "Container runtimes, the MPI flavours offered to container jobs, bind paths, "
        "registry reach and GPUs (none: the site runs no container jobs)."))
    scratch_root: AbsolutePath | None = Field(
        default=None, description="Directory on the site under which the gateway makes one "
                                  "0700 directory per job.")
    charge_factor: float = Field(default=1.0, gt=0, description="Service units per core-hour "
                                                                "here, relative to 1.0.")
    charging: SiteCharging = Field(default_factory=SiteCharging, description=(
        "Memory, GPU and node weights and a minimum charge, in SU (all optional)."))
    max_concurrent_jobs: int = Field(default=64, ge=1, description="Most gateway jobs queued "
                                                                   "or running here at once.")
    state: SiteState = Field(default=SiteState.ENABLED,
                             description="enabled, or drained (takes no new jobs).")
    routing: SiteRouting = Field(default_factory=SiteRouting, description=(
        "Labels the site requires or refuses, its relative speed and transfer rate."))

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        issues = [*self._reachability_issues(), *self._mpi_issues(), *self._list_issues(),
                  *container_issues(self.containers, self.mpi_flavors)]
        if issues:
            raise FieldIssues(issues)
        return self

    def _reachability_issues(self) -> list[tuple[Loc, str]]:
        kind = self.scheduler.kind
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
            for launcher in dict.fromkeys(flavor.launchers):
                problem = launcher_issue(self.scheduler.kind, launcher.value)
                if problem is not None:
                    issues.append((("mpi_flavors", i, "launchers"), problem))
        if self.mpi_flavors:
            issues += [(("scheduler", *loc), message)
                       for loc, message in self.scheduler.mpi_issues()]
        return issues

    def _list_issues(self) -> list[tuple[Loc, str]]:
        issues: list[tuple[Loc, str]] = []
        nets = [self.interconnect.name, *(n.name for n in self.other_interconnects)]
        for i, net in enumerate(self.other_interconnects):
            if nets.count(net.name) > 1:
                issues.append((("other_interconnects", i, "name"),
                               f"{net.name!r} is listed twice: name each network once"))
        return issues

    @property
    def is_remote(self) -> bool:
        """Reached over SSH (every kind but local)."""
        return not self.scheduler.is_local

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

    def container_caps(self) -> SiteContainerCaps:
        """What the containers core needs to know of this site (routing, launch lines)."""
        return caps(self.name, self.scheduler.kind, self.containers, self.mpi_flavors)

    @property
    def default_partition(self) -> Partition:
        return next(p for p in self.partitions if p.default)

    def partition(self, name: str | None) -> Partition | None:
        """The named partition (the default one for None), or None if there is none."""
        if name is None:
            return self.default_partition
        return next((p for p in self.partitions if p.name == name), None)
