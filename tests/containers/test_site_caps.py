"""Site declarations and versions: what a site may declare, and the message when it may not."""

from __future__ import annotations

from typing import Any

import pytest

from containers.errors import InvalidDeclaration
from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import Version, version

MPIRUN, SRUN = LauncherKind.MPIRUN, LauncherKind.SRUN


@pytest.mark.parametrize(("text", "parts"), [
    ("4", (4,)),
    ("4.0.0", (4, 0, 0)),
    ("1.2.5", (1, 2, 5)),
    ("0.31", (0, 31)),
    ("3.10.0", (3, 10, 0)),
    ("2021.10", (2021, 10)),
])
def test_versions_parse_to_numbers_and_show_as_written(text: str, parts: tuple[int, ...]
                                                       ) -> None:
    parsed = version(text)
    assert parsed.parts == parts
    assert str(parsed) == text


@pytest.mark.parametrize(("low", "high"), [
    ("3.9", "3.10"), ("1.1", "1.1.1"), ("0.26", "0.31"), ("4.1.4", "5"), ("4", "4.0.1"),
])
def test_versions_order_as_numbers(low: str, high: str) -> None:
    assert version(low) < version(high)
    assert not version(high) < version(low)


def test_missing_parts_are_zeros() -> None:
    assert version("4") == version("4.0") == version("4.0.0")
    assert hash(version("4")) == hash(version("4.0.0"))
    assert version("4.0.0") < version("4.0.1")
    assert version("4.1").major == 4 and version("4.1").minor == 1
    assert version("4").minor == 0


# "\uff11": a fullwidth 1, a digit to str.isdigit but not to [0-9].
@pytest.mark.parametrize("text", ["", "v1.2", "1.2.3-1.el8", "1..2", "1.2.3.4.5", "1.2 ",
                                  "\uff11.2"])
def test_bad_versions_say_what_to_write(text: str) -> None:
    with pytest.raises(InvalidDeclaration, match="write numbers separated by dots"):
        Version.parse(text)


def _mpi(**kw: Any) -> MpiOffer:
    base: dict[str, Any] = {"name": "mpich", "impl": MpiImpl.MPICH, "version": version("4.0.2"),
                            "launchers": (MPIRUN,)}
    return MpiOffer(**(base | kw))


def test_offers_fill_in_defaults() -> None:
    assert RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5")).argv == ("apptainer",)
    assert RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31")).argv == ("ch-run",)
    assert RuntimeOffer(RuntimeKind.SINGULARITY, version("3.11"),
                        ("/opt/sing/bin/singularity",)).argv == ("/opt/sing/bin/singularity",)
    assert _mpi().launcher_argv == ("mpirun",)
    assert _mpi(launchers=(LauncherKind.MPIEXEC,)).launcher_argv == ("mpiexec",)
    assert _mpi(command=("mpirun.mpich",)).launcher_argv == ("mpirun.mpich",)
    assert _mpi(launchers=(SRUN,), srun_mpi="pmi2").launcher_argv == ()
    assert _mpi().label == "MPICH 4.0.2"
    assert _mpi(impl=MpiImpl.OPENMPI, version=version("4.1.4")).label == "Open MPI 4"


BAD_MPI = [
    ({"name": "MPICH"}, "not a valid MPI flavor name"),
    ({"launchers": ()}, "list its launchers"),
    ({"launchers": (LauncherKind.NONE,)}, "list its launchers"),
    ({"launchers": (MPIRUN, MPIRUN)}, "a launcher is listed twice"),
    ({"launchers": (SRUN,)}, "with srun, name the plugin"),
    ({"launchers": (SRUN,), "srun_mpi": "openmpi"}, "not a valid srun MPI plugin"),
    ({"srun_mpi": "pmi2"}, "srun_mpi is for launcher srun"),
    ({"launchers": (SRUN,), "srun_mpi": "pmi2", "command": ("mpirun",)},
     "command and ranks_per_node_args are for mpirun or mpiexec"),
    ({"ranks_per_node_args": ("-ppn", "4")}, "write {n} where the ranks per node go"),
    ({"command": ("mpirun\n",)}, "without control characters"),
    ({"bind_paths": ("opt/mpich",)}, "is not an absolute path"),
    ({"bind_paths": ("/opt/mpich", "/opt/mpich")}, "a path is listed twice"),
    ({"bind_paths": ("/opt/mpi:ch",)}, "contains ':'"),
    ({"bind_paths": ("/opt/mpich",), "library_path": ("/usr/lib",)},
     "library path '/usr/lib' is not under any of its bind paths"),
]


@pytest.mark.parametrize(("change", "message"), BAD_MPI, ids=[m for _, m in BAD_MPI])
def test_contradictory_mpi_declarations_are_refused(change: dict[str, Any], message: str
                                                    ) -> None:
    with pytest.raises(InvalidDeclaration, match=message.replace("(", r"\(").replace("{", r"\{")):
        _mpi(**change)


def test_a_bind_mode_declaration() -> None:
    offer = _mpi(name="cray-mpich", impl=MpiImpl.CRAY_MPICH, version=version("8.1.28"),
                 launchers=(SRUN,), srun_mpi="pmi2",
                 bind_paths=("/opt/cray/pe/mpich/8.1.28", "/opt/cray/libfabric"),
                 library_path=("/opt/cray/pe/mpich/8.1.28/ofi/gnu/9.1/lib",))
    assert offer.family.value == "MPICH ABI"
    assert offer.library_launcher is None


BAD_SITE = [
    ({"site": "Galaxy"}, "not a valid site name"),
    ({"scheduler": "Slurm"}, "not a valid scheduler kind"),
    ({"runtimes": (RuntimeOffer(RuntimeKind.APPTAINER, version("1.2")),
                   RuntimeOffer(RuntimeKind.APPTAINER, version("1.3")))},
     "runtime apptainer is listed twice"),
    ({"mpi": (_mpi(), _mpi())}, "MPI flavour 'mpich' is listed twice"),
    ({"mpi": (_mpi(launchers=(SRUN,), srun_mpi="pmi2"),)},
     "lists srun, which only a Slurm site has \\(this one runs sge\\)"),
    ({"bind_prefixes": ("/",)}, "is the root directory"),
    ({"bind_prefixes": ("/shared/",)}, "empty or '.' segment"),
]


@pytest.mark.parametrize(("change", "message"), BAD_SITE, ids=[m[:30] for _, m in BAD_SITE])
def test_contradictory_site_declarations_are_refused(change: dict[str, Any], message: str
                                                     ) -> None:
    base: dict[str, Any] = {"site": "galaxy", "scheduler": "sge"}
    with pytest.raises(InvalidDeclaration, match=message):
        SiteContainerCaps(**(base | change))


def test_site_lookups() -> None:
    caps = SiteContainerCaps(
        "roadrunner", "slurm",
        runtimes=(RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31")),),
        mpi=(_mpi(launchers=(MPIRUN, SRUN), srun_mpi="pmi2"),
             _mpi(name="openmpi", impl=MpiImpl.OPENMPI, version=version("4.1.4"))))
    assert caps.runtime(RuntimeKind.CHARLIECLOUD) is caps.runtimes[0]
    assert caps.runtime(RuntimeKind.APPTAINER) is None
    assert caps.families == "MPICH 4.0.2, Open MPI 4"
    assert SiteContainerCaps("x", "local").families == "no MPI"
