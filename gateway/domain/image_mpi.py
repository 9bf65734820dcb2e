"""The MPI of an uploaded image: what the job states against what the gateway found (pure).

The gateway lists the image's files at submit (gateway.services.images.container_images) and
`containers.image.mpi_abi` names the MPI they hold. Here the two meet:
- nothing stated: the found MPI is taken (its implementation, and for Open MPI the series
  its library names, e.g. 4.1);
- stated and found agree (same ABI family; for Open MPI the stated release within the found
  series): the statement stands, being the more precise;
- they disagree: a 422 naming the stated field, saying what the image holds.
An MPICH-ABI library names its ABI, not its release: bind mode, which needs the release,
then asks for `container.mpi_version`.
"""

from __future__ import annotations

from containers.image import mpi_abi
from containers.image.mpi_abi import MpiAbi
from containers.runtimes import MpiImpl, MpiMode
from containers.versions import Version
from gateway.domain.errors import Invalid

FLAVOR, VERSION = "mpi.flavor", "container.mpi_version"
# The implementation names mpi_abi gives, as mpi.flavor spells them.
_IMPLEMENTATIONS = {"MPICH": MpiImpl.MPICH, "Intel MPI": MpiImpl.INTEL_MPI,
                    "MVAPICH2": MpiImpl.MVAPICH, "Cray MPICH": MpiImpl.CRAY_MPICH}


def _family(flavor: str) -> str:
    return mpi_abi.OPENMPI if flavor == MpiImpl.OPENMPI else mpi_abi.MPICH


def _found_flavor(found: MpiAbi) -> str:
    if found.family == mpi_abi.OPENMPI:
        return MpiImpl.OPENMPI.value
    names = (found.implementation or "").split(" / ")
    return next((_IMPLEMENTATIONS[n].value for n in names if n in _IMPLEMENTATIONS),
                MpiImpl.MPICH.value)


def _within(stated: str, series: str) -> bool:
    """True when release `stated` lies in `series` ("4.1.4" and "4" in "4.1"; "4.0.7" not)."""
    given = Version.parse(stated).parts[:2]
    return given == Version.parse(series).parts[:len(given)]


def reconcile(flavor: str | None, version: str | None, mode: MpiMode, found: MpiAbi
              ) -> tuple[str, str | None]:
    """(mpi.flavor, container.mpi_version) for a job whose image holds `found` (see
    module); Invalid naming the field when they contradict or something is missing."""
    if found.family == mpi_abi.NONE:
        raise Invalid(f"container.mpi is {mode.value}, but the image holds no MPI library "
                      "(no libmpi.so.N or libmpich.so.N): use an image built with MPI, or "
                      "`container.mpi: none` for a program without MPI.", field="container.mpi")
    families = {lib.family for lib in found.libraries}
    if flavor is None:
        if found.family == mpi_abi.MIXED:
            raise Invalid(f"The image holds {found.summary}: say which one the program uses "
                          "in mpi.flavor (mpich or openmpi).", field=FLAVOR)
        flavor = _found_flavor(found)
    elif _family(flavor) not in families:
        raise Invalid(f"mpi.flavor is {flavor}, but the image holds {found.summary}: fix "
                      "mpi.flavor to match the image (or leave it out: the gateway reads it).",
                      field=FLAVOR)
    series = found.release if found.family == mpi_abi.OPENMPI else None
    if flavor == MpiImpl.OPENMPI:
        if version is not None and series is not None and not _within(version, series):
            raise Invalid(f"container.mpi_version is {version}, but the image's library "
                          f"is Open MPI {series}: fix container.mpi_version (or leave it "
                          "out: the gateway reads it).", field=VERSION)
        version = version or series
        if version is None:
            raise Invalid("The image's Open MPI library does not say its release (Open MPI "
                          "3.0 to 5.0 share libmpi.so.40): state it in container.mpi_version,"
                          " e.g. \"4.1.4\".", field=VERSION)
    elif version is None and mode is MpiMode.BIND:
        raise Invalid(f"The image holds {found.summary}, whose library names its ABI but not "
                      "its release, and bind mode needs the site's library no older than the "
                      "image's: state it in container.mpi_version, e.g. \"4.0.2\".",
                      field=VERSION)
    return flavor, version
