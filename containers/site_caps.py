"""What a site declares about containers: runtimes, MPI flavours, bind paths, network.

Plain frozen dataclasses; the gateway's site-YAML schema maps onto them. Each checks
itself on construction (InvalidDeclaration says which field to fix), so the rules in
`containers.compat` can trust what they read.
"""

from __future__ import annotations

from dataclasses import dataclass

from containers.binds import check_absolute, under
from containers.errors import ContainerError, InvalidDeclaration
from containers.runtimes import (
    ABI_FAMILY,
    AbiFamily,
    LauncherKind,
    MpiImpl,
    RuntimeKind,
    abi_label,
)
from containers.versions import Version
from rules.text import MPI_FLAVOR, SITE_NAME, TextRule

SCHEDULER_KIND = TextRule("scheduler kind", r"[a-z][a-z0-9_-]{0,31}",
                          "e.g. slurm, sge, pbs, lsf or local")
# `srun --mpi=list` names: pmi2, pmix, pmix_v3, pmix_v4, ...
SRUN_MPI_PLUGIN = TextRule("srun MPI plugin", r"pmi2|pmix(?:_v[0-9]{1,2})?",
                           "pmi2 (MPICH family) or pmix / pmix_vN (Open MPI)")
SLURM = "slurm"
DEFAULT_BINARY: dict[RuntimeKind, str] = {
    RuntimeKind.APPTAINER: "apptainer",
    RuntimeKind.SINGULARITY: "singularity",
    RuntimeKind.CHARLIECLOUD: "ch-run",
}


def _check_argv(words: tuple[str, ...], what: str) -> None:
    for word in words:
        if not word or any(ord(c) < 32 or ord(c) == 127 for c in word):
            raise InvalidDeclaration(f"{what}: {word!r} must be a non-empty word without "
                                     "control characters")


def _check_paths(paths: tuple[str, ...], what: str) -> None:
    try:
        for path in paths:
            check_absolute(path, what)
    except ContainerError as exc:
        raise InvalidDeclaration(exc.message) from None
    if len(set(paths)) != len(paths):
        raise InvalidDeclaration(f"{what}: a path is listed twice; keep one")


@dataclass(frozen=True)
class RuntimeOffer:
    """A container runtime on the compute nodes; `command` starts it (default: the
    runtime's binary on PATH, e.g. ("apptainer",) or ("ch-run",))."""

    kind: RuntimeKind
    version: Version
    command: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_argv(self.command, f"{self.kind.value} command")

    @property
    def argv(self) -> tuple[str, ...]:
        return self.command or (DEFAULT_BINARY[self.kind],)

    @property
    def label(self) -> str:
        return f"{self.kind.value} {self.version}"


@dataclass(frozen=True)
class MpiOffer:
    """One MPI installation of the site and how its ranks are started.

    `name` is the site's flavour name (its `mpi_flavors`). `command` is the library's own
    launcher (default mpirun or mpiexec, whichever `launchers` lists first);
    `ranks_per_node_args` place {n} ranks per node with it. `srun_mpi` is the plugin srun
    needs for this MPI. For bind mode: `bind_paths` are host directories bound at the same
    place in the container, `library_path` the ones put first on LD_LIBRARY_PATH there.
    """

    name: str
    impl: MpiImpl
    version: Version
    launchers: tuple[LauncherKind, ...]
    command: tuple[str, ...] = ()
    ranks_per_node_args: tuple[str, ...] = ()
    srun_mpi: str | None = None
    bind_paths: tuple[str, ...] = ()
    library_path: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        what = f"MPI flavour {self.name!r}"
        problem = MPI_FLAVOR.problem(self.name)
        if problem is not None:
            raise InvalidDeclaration(problem)
        if not self.launchers or LauncherKind.NONE in self.launchers:
            raise InvalidDeclaration(f"{what}: list its launchers (mpirun, mpiexec, srun)")
        if len(set(self.launchers)) != len(self.launchers):
            raise InvalidDeclaration(f"{what}: a launcher is listed twice; keep one")
        _check_argv(self.command, f"{what} command")
        _check_argv(self.ranks_per_node_args, f"{what} ranks_per_node_args")
        if self.ranks_per_node_args and not any("{n}" in a for a in self.ranks_per_node_args):
            raise InvalidDeclaration(f"{what}: write {{n}} where the ranks per node go in "
                                     "ranks_per_node_args, e.g. ('-ppn', '{n}')")
        if (self.command or self.ranks_per_node_args) and self.library_launcher is None:
            raise InvalidDeclaration(f"{what}: command and ranks_per_node_args are for "
                                     "mpirun or mpiexec, which it does not list")
        if LauncherKind.SRUN in self.launchers:
            if self.srun_mpi is None:
                raise InvalidDeclaration(f"{what}: with srun, name the plugin (srun_mpi), "
                                         "e.g. pmi2 for MPICH or pmix for Open MPI")
            problem = SRUN_MPI_PLUGIN.problem(self.srun_mpi)
            if problem is not None:
                raise InvalidDeclaration(f"{what}: {problem}")
        elif self.srun_mpi is not None:
            raise InvalidDeclaration(f"{what}: srun_mpi is for launcher srun, which it does "
                                     "not list")
        _check_paths(self.bind_paths, f"{what} bind path")
        _check_paths(self.library_path, f"{what} library path")
        for lib in self.library_path:
            if not any(under(lib, p) for p in self.bind_paths):
                raise InvalidDeclaration(f"{what}: library path {lib!r} is not under any of "
                                         "its bind paths, so the container would not see it")

    @property
    def family(self) -> AbiFamily:
        return ABI_FAMILY[self.impl]

    @property
    def label(self) -> str:
        return abi_label(self.impl, self.version)

    @property
    def library_launcher(self) -> LauncherKind | None:
        """mpirun or mpiexec, whichever is listed first; None with srun only."""
        return next((x for x in self.launchers if x is not LauncherKind.SRUN), None)

    @property
    def launcher_argv(self) -> tuple[str, ...]:
        """The library's launcher before `-n <ranks>`: `command`, or its plain name."""
        own = self.library_launcher
        return self.command or ((own.value,) if own is not None else ())


@dataclass(frozen=True)
class SiteContainerCaps:
    """Everything the container rules need to know about one site.

    `bind_prefixes`: absolute host directories users may bind besides their job directory.
    `reaches_registries`: compute or login nodes can fetch from registries and web servers
    themselves; otherwise the gateway fetches images and ships them. `gpus`: nodes have
    NVIDIA GPUs that apptainer's and singularity's `--nv` can expose.
    """

    site: str
    scheduler: str
    runtimes: tuple[RuntimeOffer, ...] = ()
    mpi: tuple[MpiOffer, ...] = ()
    bind_prefixes: tuple[str, ...] = ()
    reaches_registries: bool = False
    gpus: bool = False

    def __post_init__(self) -> None:
        for rule, value in ((SITE_NAME, self.site), (SCHEDULER_KIND, self.scheduler)):
            problem = rule.problem(value)
            if problem is not None:
                raise InvalidDeclaration(problem)
        kinds = [r.kind for r in self.runtimes]
        twice = sorted({k.value for k in kinds if kinds.count(k) > 1})
        if twice:
            raise InvalidDeclaration(f"site {self.site}: runtime {twice[0]} is listed twice; "
                                     "keep one")
        names = [m.name for m in self.mpi]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InvalidDeclaration(f"site {self.site}: MPI flavour {twice[0]!r} is listed "
                                     "twice; keep one")
        if self.scheduler != SLURM:
            for offer in self.mpi:
                if LauncherKind.SRUN in offer.launchers:
                    raise InvalidDeclaration(
                        f"site {self.site}: MPI flavour {offer.name!r} lists srun, which "
                        f"only a Slurm site has (this one runs {self.scheduler})")
        _check_paths(self.bind_prefixes, f"site {self.site} bind prefix")

    def runtime(self, kind: RuntimeKind) -> RuntimeOffer | None:
        """The site's offer of runtime `kind`, if any."""
        return next((r for r in self.runtimes if r.kind is kind), None)

    @property
    def families(self) -> str:
        """The MPI the site offers, for messages: "MPICH 4.0.2, Open MPI 4"."""
        return ", ".join(m.label for m in self.mpi) or "no MPI"
