"""A site config's `containers` section: what containerised jobs find on the compute nodes.

    containers:
      runtimes:
        - {kind: apptainer, version: "1.2.5"}          # command: [/opt/apptainer/bin/apptainer]
      mpi:
        - flavor: mpich                                # an entry of mpi_flavors
          implementation: mpich                        # its ABI family follows from it
          version: "4.0.2"
          bind_paths: [/opt/mpich]                     # bind mode: bound at the same place
          library_path: [/opt/mpich/lib]               # first on LD_LIBRARY_PATH in there
      bind_prefixes: [/project/shared]                 # areas users may bind
      reaches_registries: false                        # can nodes pull images themselves?
      gpus: false

An MPI entry names a flavour of `mpi_flavors`, which already says how its ranks start
(launchers, command, ranks per node, srun's plugin), and adds what container jobs need:
the implementation and release (the ABI family follows from the implementation: MPICH,
Intel MPI, MVAPICH and Cray MPICH share the MPICH ABI; Open MPI is apart) and, for bind
mode, the host paths bound into the image. Only the flavours listed here are offered to
container jobs. `caps` turns the section into the containers core's `SiteContainerCaps`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from containers.binds import check_absolute, under
from containers.errors import ContainerError
from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import VERSION, Version
from gateway.siteconfig.cluster import MpiFlavor
from gateway.siteconfig.fields import ArgvItem, FieldIssues, Loc, Section, named
from gateway.siteconfig.keys import no_private_key
from rules.text import MPI_FLAVOR


def _host_path(value: str) -> str:
    return check_absolute(value, "path")  # InvalidBind is a ValueError: says what is wrong


VersionText = Annotated[str, AfterValidator(VERSION.check), Field(
    description="The release, as numbers: e.g. \"1.2.5\" (quoted: YAML reads 0.31 as a "
                "number).", json_schema_extra={"pattern": VERSION.json_pattern})]
FlavorRef = Annotated[str, *named(
    MPI_FLAVOR, "The name of an entry of mpi_flavors (its launchers, command and srun_mpi).")]
HostPath = Annotated[str, AfterValidator(no_private_key), AfterValidator(_host_path),
                     Field(json_schema_extra={"pattern": "^/"})]


def _twice(values: Sequence[object]) -> set[int]:
    """Positions of values listed before."""
    return {i for i, v in enumerate(values) if v in values[:i]}


class ContainerRuntime(Section):
    """A container runtime on the compute nodes."""

    kind: RuntimeKind = Field(description="apptainer, singularity or charliecloud (ch-run).")
    version: VersionText
    command: list[ArgvItem] = Field(default_factory=list, description=(
        "The runtime's command as argv, e.g. [/opt/apptainer/1.2.5/bin/apptainer]; default: "
        "apptainer, singularity or ch-run on the account's PATH."))


class ContainerMpi(Section):
    """An MPI flavour offered to container jobs: an entry of mpi_flavors (how its ranks
    start), its implementation and release, and what bind mode binds into images."""

    flavor: FlavorRef
    implementation: MpiImpl = Field(description=(
        "mpich, intel-mpi, mvapich, cray-mpich (the MPICH ABI) or openmpi."))
    version: VersionText
    bind_paths: list[HostPath] = Field(default_factory=list, description=(
        "Bind mode: host directories of this MPI (libraries and what they load) bound at "
        "the same place in the container. Without them the flavour serves hybrid mode only."))
    library_path: list[HostPath] = Field(default_factory=list, description=(
        "Bind mode: directories under bind_paths put first on LD_LIBRARY_PATH in the "
        "container."))

    @model_validator(mode="after")
    def _paths(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        for name, paths in (("bind_paths", self.bind_paths),
                            ("library_path", self.library_path)):
            for i in sorted(_twice(paths)):
                issues.append(((name, i), f"{paths[i]!r} is listed twice: keep one"))
        for i, lib in enumerate(self.library_path):
            if not any(under(lib, p) for p in self.bind_paths):
                issues.append((("library_path", i), f"{lib!r} is not under any of bind_paths, "
                                                    "so the container would not see it"))
        if issues:
            raise FieldIssues(issues)
        return self


class SiteContainers(Section):
    """What containerised jobs find here (all optional: no runtimes, no container jobs)."""

    runtimes: list[ContainerRuntime] = Field(default_factory=list, description=(
        "Container runtimes on the compute nodes, with their releases."))
    mpi: list[ContainerMpi] = Field(default_factory=list, description=(
        "The MPI flavours offered to container jobs (hybrid and bind mode), each naming an "
        "entry of mpi_flavors."))
    bind_prefixes: list[HostPath] = Field(default_factory=list, description=(
        "Shared areas (absolute host directories) users may bind besides their job "
        "directory."))
    reaches_registries: bool = Field(default=False, description=(
        "Whether the site's nodes can pull images from registries and web servers "
        "themselves; otherwise the gateway fetches images and ships them."))
    gpus: bool = Field(default=False, description=(
        "Whether the nodes have NVIDIA GPUs apptainer and singularity can show containers "
        "(`--nv`)."))

    @model_validator(mode="after")
    def _once_each(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        for i in sorted(_twice([r.kind for r in self.runtimes])):
            issues.append((("runtimes", i, "kind"), f"{self.runtimes[i].kind.value} is listed "
                                                    "twice: one entry per runtime"))
        for i in sorted(_twice([m.flavor for m in self.mpi])):
            issues.append((("mpi", i, "flavor"), f"{self.mpi[i].flavor!r} is listed twice: "
                                                 "one entry per flavour"))
        for i in sorted(_twice(self.bind_prefixes)):
            issues.append((("bind_prefixes", i), f"{self.bind_prefixes[i]!r} is listed twice"))
        if issues:
            raise FieldIssues(issues)
        return self


def _offer(entry: ContainerMpi, flavor: MpiFlavor) -> MpiOffer:
    return MpiOffer(entry.flavor, entry.implementation, Version.parse(entry.version),
                    tuple(LauncherKind(x.value) for x in flavor.launchers),
                    tuple(flavor.command), tuple(flavor.ranks_per_node_args),
                    flavor.srun_mpi, tuple(entry.bind_paths), tuple(entry.library_path))


def container_issues(section: SiteContainers, flavors: Sequence[MpiFlavor]
                     ) -> list[tuple[Loc, str]]:
    """Problems of `section` against the site's mpi_flavors, under `containers`."""
    by_name = {f.name: f for f in flavors}
    issues: list[tuple[Loc, str]] = []
    for i, entry in enumerate(section.mpi):
        flavor = by_name.get(entry.flavor)
        if flavor is None:
            have = ", ".join(by_name) or "none"
            issues.append((("containers", "mpi", i, "flavor"),
                           f"no MPI flavor {entry.flavor!r} in mpi_flavors (it has: {have}): "
                           "name one of them, which says how ranks start"))
            continue
        try:
            _offer(entry, flavor)
        except ContainerError as exc:
            issues.append((("containers", "mpi", i, "flavor"), exc.message))
    return issues


def caps(site: str, scheduler: str, section: SiteContainers, flavors: Sequence[MpiFlavor]
         ) -> SiteContainerCaps:
    """The section as the containers core reads it (`container_issues` found nothing)."""
    by_name = {f.name: f for f in flavors}
    runtimes = tuple(RuntimeOffer(r.kind, Version.parse(r.version), tuple(r.command))
                     for r in section.runtimes)
    return SiteContainerCaps(site, scheduler, runtimes,
                             tuple(_offer(m, by_name[m.flavor]) for m in section.mpi),
                             tuple(section.bind_prefixes), section.reaches_registries,
                             section.gpus)
