"""The vocabulary: container runtimes, MPI modes, launchers, MPI implementations and ABIs.

MPI modes (how a containerised MPI program meets the site's MPI):
- hybrid: the site's launcher (mpirun, mpiexec or srun) starts one container per rank and
  the image's own MPI library runs inside; it must speak to the site's launcher, so it must
  belong to the same ABI family as an MPI the site offers.
- bind: the site's MPI libraries are bind-mounted into the image (paths the site declares)
  and replace the image's at run time; the image's MPI must be ABI-compatible with them.
- none: one process in one container, no launcher.
"""

from __future__ import annotations

from enum import StrEnum

from containers.versions import Version, version


class RuntimeKind(StrEnum):
    APPTAINER = "apptainer"
    SINGULARITY = "singularity"
    CHARLIECLOUD = "charliecloud"


# Which runtime a job gets when it names none: the first the site offers and the job fits.
RUNTIME_PREFERENCE: tuple[RuntimeKind, ...] = (
    RuntimeKind.APPTAINER, RuntimeKind.SINGULARITY, RuntimeKind.CHARLIECLOUD)

# The oldest release whose flags the launch lines use, and why that one.
MIN_RUNTIME_VERSION: dict[RuntimeKind, tuple[Version, str]] = {
    # `--no-eval` (environment values are data, not shell): Apptainer 1.1.0.
    RuntimeKind.APPTAINER: (version("1.1.0"), "--no-eval"),
    # SingularityCE added the same `--no-eval` in 3.10.0.
    RuntimeKind.SINGULARITY: (version("3.10.0"), "--no-eval"),
    # `ch-run --set-env=NAME=VALUE` (a variable on the command line): Charliecloud 0.26.
    RuntimeKind.CHARLIECLOUD: (version("0.26"), "ch-run --set-env=NAME=VALUE"),
}


class MpiMode(StrEnum):
    HYBRID = "hybrid"
    BIND = "bind"
    NONE = "none"


class LauncherKind(StrEnum):
    """What starts the ranks: the library's own launcher, Slurm's srun, or nothing."""

    MPIRUN = "mpirun"
    MPIEXEC = "mpiexec"
    SRUN = "srun"
    NONE = "none"


class MpiImpl(StrEnum):
    """An MPI implementation, as an image or a site declares it."""

    MPICH = "mpich"
    INTEL_MPI = "intel-mpi"
    MVAPICH = "mvapich"
    CRAY_MPICH = "cray-mpich"
    OPENMPI = "openmpi"


class AbiFamily(StrEnum):
    """Implementations whose libraries can stand in for each other."""

    MPICH = "MPICH ABI"
    OPENMPI = "Open MPI"


IMPL_LABEL: dict[MpiImpl, str] = {
    MpiImpl.MPICH: "MPICH",
    MpiImpl.INTEL_MPI: "Intel MPI",
    MpiImpl.MVAPICH: "MVAPICH",
    MpiImpl.CRAY_MPICH: "Cray MPICH",
    MpiImpl.OPENMPI: "Open MPI",
}

ABI_FAMILY: dict[MpiImpl, AbiFamily] = {
    MpiImpl.MPICH: AbiFamily.MPICH,
    MpiImpl.INTEL_MPI: AbiFamily.MPICH,
    MpiImpl.MVAPICH: AbiFamily.MPICH,
    MpiImpl.CRAY_MPICH: AbiFamily.MPICH,
    MpiImpl.OPENMPI: AbiFamily.OPENMPI,
}

# The MPICH ABI Compatibility Initiative (libmpi.so.12) starts at these releases; older
# ones are outside it and only match their own implementation.
MPICH_ABI_SINCE: dict[MpiImpl, Version] = {
    MpiImpl.MPICH: version("3.1"),
    MpiImpl.INTEL_MPI: version("5.0"),
    MpiImpl.MVAPICH: version("2.0"),
    MpiImpl.CRAY_MPICH: version("7.0"),
}

# The `srun --mpi=` plugins a family's MPI can start under: the PMI-2 wire protocol for the
# MPICH family, PMIx for Open MPI (its only one since 5.0; `pmix_v4` etc. are PMIx too).
SRUN_PLUGIN_PREFIX: dict[AbiFamily, str] = {AbiFamily.MPICH: "pmi2", AbiFamily.OPENMPI: "pmix"}


def abi_label(impl: MpiImpl, ver: Version) -> str:
    """How a person names this MPI in a message: "Open MPI 4", "MPICH 4.0"."""
    if impl is MpiImpl.OPENMPI:
        return f"Open MPI {ver.major}"
    return f"{IMPL_LABEL[impl]} {ver}"


def in_mpich_abi(impl: MpiImpl, ver: Version) -> bool:
    """True when this release belongs to the MPICH ABI (libmpi.so.12)."""
    since = MPICH_ABI_SINCE.get(impl)
    return since is not None and ver >= since
