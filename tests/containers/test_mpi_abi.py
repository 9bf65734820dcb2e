"""containers.image.mpi_abi: file lists of images -> MPI family and ABI. The library names are
those the distributions install (Debian 12: Open MPI 4.1.4 ships libmpi.so.40.30.4 beside
libopen-pal.so.40.30.2; MPICH 4.0.2 ships libmpich.so.12.2.2)."""

from __future__ import annotations

import pytest

from containers.image.mpi_abi import MIXED, MPICH, NONE, OPENMPI, detect_mpi

DEB = "/usr/lib/x86_64-linux-gnu"

# (case, paths, family, implementation, version, release, ABI text fragment)
CASES = [
    ("nothing", ["/bin/sh", f"{DEB}/libc.so.6"], NONE, None, None, None, None),
    ("unversioned dev link only", [f"{DEB}/libmpi.so"], NONE, None, None, None, None),
    ("debian open mpi 4.1",
     [f"{DEB}/libmpi.so.40", f"{DEB}/libmpi.so.40.30.4", f"{DEB}/libopen-pal.so.40.30.2",
      f"{DEB}/libmpi_cxx.so.40.30.1"],
     OPENMPI, "Open MPI", "40.30.4", "4.1", "libmpi.so.40"),
    ("open mpi 5.0", ["/opt/ompi/lib/libmpi.so.40.40.7", "/opt/ompi/lib/libmpi.so.40"],
     OPENMPI, "Open MPI", "40.40.7", "5.0", "Open MPI 3.0 to 5.0"),
    ("open mpi 4.0", ["/usr/lib64/openmpi/lib/libmpi.so.40.20.3"], OPENMPI, "Open MPI",
     "40.20.3", "4.0", "libmpi.so.40"),
    ("open mpi 3.1", ["/usr/lib/libmpi.so.40.10.4"], OPENMPI, "Open MPI", "40.10.4", "3.1",
     "libmpi.so.40"),
    ("open mpi soname only", ["/usr/lib/libmpi.so.40"], OPENMPI, "Open MPI", None, None,
     "libmpi.so.40"),
    ("open mpi 2.x", ["/usr/lib/libmpi.so.20.10.1"], OPENMPI, "Open MPI", "20.10.1", None,
     "libmpi.so.20"),
    ("open mpi 1.10 is not the mpich abi",
     ["/usr/lib/openmpi/lib/libmpi.so.12.0.2", "/usr/lib/openmpi/lib/libopen-pal.so.13"],
     OPENMPI, "Open MPI", "12.0.2", None, "not the MPICH ABI"),
    ("debian mpich 4.0", [f"{DEB}/libmpich.so.12", f"{DEB}/libmpich.so.12.2.2"],
     MPICH, "MPICH", "12.2.2", None, "libmpi.so.12"),
    ("mpich from source", ["/usr/local/lib/libmpi.so.12.1.8", "/usr/local/lib/libmpi.so.12"],
     MPICH, "an MPICH-ABI MPI", "12.1.8", None, "MPICH ABI"),
    ("mpich soname only", ["/usr/lib/libmpi.so.12", "/usr/lib/libmpich.so.12"], MPICH,
     "MPICH", None, None, "MPICH ABI"),
    ("intel mpi", ["/opt/intel/oneapi/mpi/2021.10.0/lib/release/libmpi.so.12.0.0"], MPICH,
     "Intel MPI", "12.0.0", None, "MPICH ABI"),
    ("mvapich2", ["/opt/mvapich2-2.3.7/lib/libmpi.so.12.1.1"], MPICH, "MVAPICH2", "12.1.1",
     None, "MPICH ABI"),
    ("cray mpich", ["/opt/cray/pe/mpich/8.1.27/ofi/gnu/9.1/lib/libmpi_gnu_91.so.12.0.0"],
     MPICH, "Cray MPICH", "12.0.0", None, "MPICH ABI"),
    ("open mpi beside an mpich-abi mpi in another directory",
     ["/opt/intel/oneapi/mpi/latest/lib/libmpi.so.12", f"{DEB}/libmpi.so.40.30.4",
      f"{DEB}/libopen-pal.so.40.30.2"], MIXED, None, None, None, None),
]


@pytest.mark.parametrize(("case", "paths", "family", "implementation", "version", "release",
                          "abi"), CASES, ids=[c[0] for c in CASES])
def test_detect_mpi_abi(case: str, paths: list[str], family: str, implementation: str | None,
                        version: str | None, release: str | None, abi: str | None) -> None:
    found = detect_mpi(paths)
    assert (found.family, found.implementation, found.version, found.release) == (
        family, implementation, version, release)
    if abi is None:
        assert found.abi is None
    else:
        assert found.abi is not None and abi in found.abi


def test_mpi_abi_summary_reads_as_one_line() -> None:
    summary = detect_mpi([f"{DEB}/libmpi.so.40.30.2"]).summary
    assert summary == ("Open MPI, Open MPI ABI (libmpi.so.40: Open MPI 3.0 to 5.0); "
                       "library 40.30.2; Open MPI 4.1.x")
    assert detect_mpi([]).summary.startswith("none")
    mixed = detect_mpi([f"{DEB}/libmpich.so.12", f"{DEB}/libmpi.so.40"]).summary
    assert mixed.startswith("mixed: MPICH (libmpich.so.12), Open MPI (libmpi.so.40)")


def test_mpi_abi_libraries_name_the_evidence() -> None:
    found = detect_mpi([f"{DEB}/libmpich.so.12.2.2", "/bin/sh"])
    assert [lib.path for lib in found.libraries] == [f"{DEB}/libmpich.so.12.2.2"]
    assert found.libraries[0].soname == "libmpich.so.12"
