"""An uploaded image's MPI against what the job states, table-driven: the found MPI fills
what is left out, agreement keeps the statement, a contradiction is a 422 naming the field."""

from __future__ import annotations

import pytest

from containers.image.mpi_abi import MpiAbi, detect_mpi
from containers.runtimes import MpiMode
from gateway.domain.errors import Invalid
from gateway.domain.image_mpi import reconcile

LIB = "/usr/lib/x86_64-linux-gnu"
OPENMPI_41 = detect_mpi([f"{LIB}/libmpi.so.40.30.4", f"{LIB}/libmpi.so.40",
                         f"{LIB}/libopen-pal.so.40.30.2"])
OPENMPI_ANY = detect_mpi([f"{LIB}/libmpi.so.40"])
MPICH = detect_mpi([f"{LIB}/libmpich.so.12.2.2", f"{LIB}/libmpich.so.12"])
INTEL = detect_mpi(["/opt/intel/oneapi/mpi/2021.10.0/lib/release/libmpi.so.12.0.0"])
MIXED = detect_mpi([f"{LIB}/libmpich.so.12", f"{LIB}/openmpi/lib/libmpi.so.40.30.4",
                    f"{LIB}/openmpi/lib/libopen-pal.so.40.30.2"])
NONE = detect_mpi(["/bin/sh", f"{LIB}/libc.so.6"])
HYBRID, BIND = MpiMode.HYBRID, MpiMode.BIND

GOOD = [
    ("Open MPI found", None, None, HYBRID, OPENMPI_41, ("openmpi", "4.1")),
    ("Open MPI stated within the found series", "openmpi", "4.1.4", BIND, OPENMPI_41,
     ("openmpi", "4.1.4")),
    ("Open MPI stated by its major", "openmpi", "4", HYBRID, OPENMPI_41, ("openmpi", "4")),
    ("Open MPI whose library names no series", "openmpi", "5.0.3", HYBRID, OPENMPI_ANY,
     ("openmpi", "5.0.3")),
    ("MPICH found: its release is not needed in hybrid mode", None, None, HYBRID, MPICH,
     ("mpich", None)),
    ("MPICH with its release stated, for bind mode", None, "4.0.2", BIND, MPICH,
     ("mpich", "4.0.2")),
    ("Intel MPI named by its path", None, None, HYBRID, INTEL, ("intel-mpi", None)),
    ("another MPICH-ABI implementation stated", "mvapich", None, HYBRID, MPICH,
     ("mvapich", None)),
    ("both in the image, the program's stated", "mpich", None, HYBRID, MIXED,
     ("mpich", None)),
]


@pytest.mark.parametrize(("flavor", "version", "mode", "found", "expected"),
                         [pytest.param(*g[1:], id=g[0]) for g in GOOD])
def test_found_and_stated_agree(flavor: str | None, version: str | None, mode: MpiMode,
                                found: MpiAbi, expected: tuple[str, str | None]) -> None:
    assert reconcile(flavor, version, mode, found) == expected


BAD = [
    ("Open MPI stated, MPICH inside", "openmpi", "4.1", HYBRID, MPICH, "mpi.flavor",
     "mpi.flavor is openmpi, but the image holds MPICH, MPICH ABI (libmpi.so.12"),
    ("MPICH stated, Open MPI inside", "mpich", None, HYBRID, OPENMPI_41, "mpi.flavor",
     "mpi.flavor is mpich, but the image holds Open MPI, Open MPI ABI"),
    ("another Open MPI series stated", "openmpi", "4.0.7", HYBRID, OPENMPI_41,
     "container.mpi_version",
     "container.mpi_version is 4.0.7, but the image's library is Open MPI 4.1"),
    ("another Open MPI major stated", "openmpi", "5", HYBRID, OPENMPI_41,
     "container.mpi_version", "is 5, but the image's library is Open MPI 4.1"),
    ("Open MPI whose series the library does not name", None, None, HYBRID, OPENMPI_ANY,
     "container.mpi_version", "Open MPI 3.0 to 5.0 share libmpi.so.40"),
    ("MPICH in bind mode without its release", None, None, BIND, MPICH,
     "container.mpi_version", "names its ABI but not its release"),
    ("both MPIs and nothing stated", None, None, HYBRID, MIXED, "mpi.flavor",
     "say which one the program uses in mpi.flavor"),
    ("no MPI at all", None, None, HYBRID, NONE, "container.mpi",
     "the image holds no MPI library"),
]


@pytest.mark.parametrize(("flavor", "version", "mode", "found", "field", "words"),
                         [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_a_contradiction_names_the_field(flavor: str | None, version: str | None,
                                         mode: MpiMode, found: MpiAbi, field: str,
                                         words: str) -> None:
    with pytest.raises(Invalid) as caught:
        reconcile(flavor, version, mode, found)
    assert caught.value.extra == {"field": field}
    assert words in caught.value.detail, caught.value.detail
