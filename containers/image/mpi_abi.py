"""Which MPI an image was built against, from the names of the files it holds.

An MPI application inside a container only runs fast with the host's MPI bound in, and that
works when both speak the same ABI (the library's soname):

- `libmpi.so.12`: the MPICH ABI (the MPICH ABI Compatibility Initiative, 2013): MPICH >= 3.1,
  Intel MPI >= 5.0, MVAPICH2 >= 2.0, Cray MPICH (MPT >= 7.0). Debian names MPICH's own
  library `libmpich.so.12` (same ABI) so it can sit beside Open MPI's.
- `libmpi.so.40`: Open MPI 3.0 to 5.0. Its file version (libtool `age`) names the series:
  40.0 = 3.0, 40.10 = 3.1, 40.20 = 4.0, 40.30 = 4.1, 40.40 = 5.0.
- Open MPI 1.10 also used `libmpi.so.12`, but with its own libopen-pal / libopen-rte beside
  it: not the MPICH ABI. Open MPI 2.x is `libmpi.so.20`.

The caller lists the image (`unsquashfs -l`); nothing here reads files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MPICH = "mpich"
OPENMPI = "openmpi"
NONE = "none"
MIXED = "mixed"

# The main library of an MPI: soname major, then the file's version if the name has one.
_LIBMPI = re.compile(r"lib(?P<name>mpi|mpich)\.so\.(?P<major>\d+)(?P<rest>(?:\.\d+)*)")
# Cray's compiler-specific builds of Cray MPICH: libmpi_cray.so.12, libmpi_gnu_123.so.12.
_CRAY = re.compile(r"libmpi_(?:cray|gnu|intel|nvidia|amd|aocc)(?:_\d+)?\.so\.(?P<major>12)"
                   r"(?P<rest>(?:\.\d+)*)")
# Libraries only Open MPI ships (1.x to 4.x; 5.x drops libopen-rte).
_OPENMPI_MARKERS = re.compile(r"lib(?:open-pal|open-rte|mpi_mpifh)\.so(?:\.\d+)*")
_OPENMPI_SERIES = {"0": "3.0", "10": "3.1", "20": "4.0", "30": "4.1", "40": "5.0"}
# Path words that name the MPICH-ABI implementation (checked in order, lowercase).
_MPICH_HINTS = (("oneapi", "Intel MPI"), ("intel", "Intel MPI"), ("impi", "Intel MPI"),
                ("mvapich", "MVAPICH2"), ("cray", "Cray MPICH"), ("mpich", "MPICH"))
_ABI_TEXT = {
    (MPICH, 12): "MPICH ABI (libmpi.so.12: MPICH >= 3.1, Intel MPI, MVAPICH2, Cray MPICH)",
    (OPENMPI, 40): "Open MPI ABI (libmpi.so.40: Open MPI 3.0 to 5.0)",
    (OPENMPI, 20): "Open MPI 2.x ABI (libmpi.so.20)",
    (OPENMPI, 12): "Open MPI 1.10 ABI (libmpi.so.12 with libopen-pal: not the MPICH ABI)",
}


@dataclass(frozen=True)
class MpiLibrary:
    """One MPI library file found in the image."""

    path: str
    family: str  # MPICH or OPENMPI
    soname: str  # "libmpi.so.40"
    major: int
    version: str | None  # the file's full version ("40.30.2") when its name has one
    implementation: str  # "Open MPI", "MPICH", "Intel MPI", ...


@dataclass(frozen=True)
class MpiAbi:
    """What the image's MPI libraries say, as a whole."""

    family: str  # MPICH, OPENMPI, NONE, or MIXED (both ABIs present: ambiguous)
    abi: str | None  # a sentence naming the ABI; None for NONE and MIXED
    implementation: str | None
    version: str | None  # the library file version, e.g. "40.30.2"
    release: str | None  # the Open MPI series the version means ("4.1"), when known
    libraries: tuple[MpiLibrary, ...] = ()

    @property
    def summary(self) -> str:
        """One line for people."""
        if self.family == NONE:
            return "none (no libmpi.so.N or libmpich.so.N in the image)"
        if self.family == MIXED:
            names = sorted({f"{lib.implementation} ({lib.soname})" for lib in self.libraries})
            return "mixed: " + ", ".join(names) + " (which one the app uses is ambiguous)"
        parts = [f"{self.implementation}, {self.abi}"]
        if self.version:
            parts.append(f"library {self.version}")
        if self.release:
            parts.append(f"Open MPI {self.release}.x")
        return "; ".join(parts)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _dirname(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0] if "/" in path else ""


def _mpich_implementation(path: str) -> str:
    lowered = path.lower()
    for word, name in _MPICH_HINTS:
        if word in lowered:
            return name
    return "an MPICH-ABI MPI"


def _library(path: str, openmpi_markers: bool) -> MpiLibrary | None:
    name = _basename(path)
    cray = _CRAY.fullmatch(name)
    if cray:
        major, rest = int(cray["major"]), cray["rest"]
        soname = f"{name.split('.so.')[0]}.so.{major}"
        return MpiLibrary(path, MPICH, soname, major, _version(major, rest), "Cray MPICH")
    match = _LIBMPI.fullmatch(name)
    if not match:
        return None
    major, rest = int(match["major"]), match["rest"]
    soname = f"lib{match['name']}.so.{major}"
    version = _version(major, rest)
    if match["name"] == "mpich" and major == 12:
        return MpiLibrary(path, MPICH, soname, major, version, _mpich_implementation(path))
    if match["name"] == "mpi" and major == 12 and not openmpi_markers:
        return MpiLibrary(path, MPICH, soname, major, version, _mpich_implementation(path))
    if match["name"] == "mpi" and (major in (20, 40) or openmpi_markers):
        return MpiLibrary(path, OPENMPI, soname, major, version, "Open MPI")
    return None


def _version(major: int, rest: str) -> str | None:
    return f"{major}{rest}" if rest else None


def _openmpi_release(version: str | None) -> str | None:
    if version is None:
        return None
    parts = version.split(".")
    return _OPENMPI_SERIES.get(parts[1]) if parts[0] == "40" and len(parts) > 1 else None


def detect_mpi(paths: Iterable[str]) -> MpiAbi:
    """The MPI family and ABI of an image holding `paths` (absolute paths inside it)."""
    listed = sorted(paths)
    # Open MPI's own libraries sit beside its libmpi: judge each directory by itself.
    openmpi_dirs = {_dirname(p) for p in listed if _OPENMPI_MARKERS.fullmatch(_basename(p))}
    libraries = tuple(lib for p in listed
                      if (lib := _library(p, _dirname(p) in openmpi_dirs)) is not None)
    if not libraries:
        return MpiAbi(NONE, None, None, None, None)
    abis = {(lib.family, lib.major) for lib in libraries}
    if len(abis) > 1:
        return MpiAbi(MIXED, None, None, None, None, libraries)
    family, major = abis.pop()
    versions = [lib.version for lib in libraries if lib.version]
    # The real file carries the longest version (its symlinks drop the tail).
    version = max(versions, key=lambda v: [int(n) for n in v.split(".")]) if versions else None
    implementations = sorted({lib.implementation for lib in libraries})
    # A specific name ("Intel MPI") beats the generic one when both paths appear.
    named = [i for i in implementations if i != "an MPICH-ABI MPI"] or implementations
    release = _openmpi_release(version) if family == OPENMPI else None
    return MpiAbi(family, _ABI_TEXT.get((family, major), f"{family} ABI (lib major {major})"),
                  " / ".join(named), version, release, libraries)
