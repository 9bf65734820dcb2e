"""A site config's `containers` section: refused naming the field, and read as the
containers core's SiteContainerCaps (the shipped testbed templates included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import version
from gateway.siteconfig import SiteConfigError, load_site_config, validate_site_config

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"
MPICH_BIND = {"flavor": "mpich", "implementation": "mpich", "version": "4.1.2",
              "bind_paths": ["/opt/mpich"], "library_path": ["/opt/mpich/lib"]}
OPENMPI = {"flavor": "openmpi", "implementation": "openmpi", "version": "4.1.4"}


def _with(good: dict[str, Any], **containers: Any) -> dict[str, Any]:
    good["containers"] = {**good["containers"], **containers}
    return good


# (id, containers section changes, field the problem names, words its message holds)
BAD: list[tuple[str, dict[str, Any], str, str]] = [
    ("runtime-unknown", {"runtimes": [{"kind": "podman", "version": "4.3"}]},
     "containers.runtimes[0].kind", "'apptainer', 'singularity' or 'charliecloud'"),
    ("runtime-version-number", {"runtimes": [{"kind": "charliecloud", "version": 0.31}]},
     "containers.runtimes[0].version", "quote it in YAML"),
    ("runtime-version-suffix", {"runtimes": [{"kind": "apptainer", "version": "1.2.5-1.el8"}]},
     "containers.runtimes[0].version", "no suffix such as -1.el8"),
    ("runtime-version-missing", {"runtimes": [{"kind": "apptainer"}]},
     "containers.runtimes[0].version", "required"),
    ("runtime-twice", {"runtimes": [{"kind": "apptainer", "version": "1.2.5"},
                                    {"kind": "apptainer", "version": "1.3.0"}]},
     "containers.runtimes[1].kind", "apptainer is listed twice"),
    ("runtime-command-multiline", {"runtimes": [{"kind": "apptainer", "version": "1.2.5",
                                                 "command": ["apptainer\nrm -rf /"]}]},
     "containers.runtimes[0].command[0]", "one line per list item"),
    ("mpi-unknown-flavor", {"mpi": [{**MPICH_BIND, "flavor": "impi"}]},
     "containers.mpi[0].flavor", "no MPI flavor 'impi' in mpi_flavors (it has: openmpi, "
                                 "mpich)"),
    ("mpi-unknown-implementation", {"mpi": [{**MPICH_BIND, "implementation": "lam"}]},
     "containers.mpi[0].implementation", "'mpich', 'intel-mpi', 'mvapich', 'cray-mpich' or "
                                         "'openmpi'"),
    ("mpi-twice", {"mpi": [MPICH_BIND, MPICH_BIND]}, "containers.mpi[1].flavor",
     "'mpich' is listed twice"),
    ("bind-path-relative", {"mpi": [{**MPICH_BIND, "bind_paths": ["opt/mpich"]}]},
     "containers.mpi[0].bind_paths[0]", "is not an absolute path"),
    ("bind-path-colon", {"mpi": [{**MPICH_BIND, "bind_paths": ["/opt/mpich:/x"]}]},
     "containers.mpi[0].bind_paths[0]", "contains ':'"),
    ("library-outside-binds", {"mpi": [{**MPICH_BIND, "library_path": ["/usr/lib"]}]},
     "containers.mpi[0].library_path[0]", "not under any of bind_paths"),
    ("bind-prefix-dotdot", {"bind_prefixes": ["/project/../etc"]},
     "containers.bind_prefixes[0]", "'..'"),
    ("bind-prefix-root", {"bind_prefixes": ["/"]}, "containers.bind_prefixes[0]",
     "is the root directory"),
    ("gpus-text", {"gpus": "maybe"}, "containers.gpus", "expected true or false"),
    ("unknown-field", {"registries": True}, "containers.registries", "unknown field"),
]


@pytest.mark.parametrize(("changes", "field", "words"),
                         [pytest.param(c, f, w, id=i) for i, c, f, w in BAD])
def test_a_bad_containers_section_names_the_field(
        good: dict[str, Any], changes: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(_with(good, **changes), "alpha.yaml")
    problems = {p.field: p.message for p in caught.value.problems}
    assert field in problems, problems
    assert words in problems[field], problems[field]


def test_an_srun_plugin_the_containers_core_does_not_know_names_the_flavor(
        good: dict[str, Any]) -> None:
    good["mpi_flavors"][1]["srun_mpi"] = "cray_shasta"
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(_with(good, mpi=[MPICH_BIND]), "alpha.yaml")
    [problem] = caught.value.problems
    assert problem.field == "containers.mpi[0].flavor"
    assert "'cray_shasta' is not a valid srun MPI plugin" in problem.message


def test_the_section_is_read_as_the_cores_declaration(good: dict[str, Any]) -> None:
    config = validate_site_config(_with(
        good, runtimes=[{"kind": "apptainer", "version": "1.2.5",
                         "command": ["/opt/apptainer/bin/apptainer"]},
                        {"kind": "charliecloud", "version": "0.31"}],
        mpi=[MPICH_BIND, OPENMPI], reaches_registries=True, gpus=True))
    assert config.container_caps() == SiteContainerCaps(
        "alpha", "slurm",
        (RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"),
                      ("/opt/apptainer/bin/apptainer",)),
         RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))),
        (MpiOffer("mpich", MpiImpl.MPICH, version("4.1.2"), (LauncherKind.SRUN,),
                  srun_mpi="pmi2", bind_paths=("/opt/mpich",),
                  library_path=("/opt/mpich/lib",)),
         MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (LauncherKind.MPIRUN,),
                  ("mpirun.openmpi",), ("--map-by", "ppr:{n}:node"))),
        ("/project/shared",), reaches_registries=True, gpus=True)


def test_no_section_means_no_container_jobs(good: dict[str, Any]) -> None:
    del good["containers"]
    caps = validate_site_config(good).container_caps()
    assert (caps.runtimes, caps.mpi, caps.bind_prefixes) == ((), (), ())


@pytest.mark.parametrize("name", ["roadrunner", "galaxy"])
def test_the_testbed_offers_charliecloud_and_debian_mpich(name: str) -> None:
    caps = load_site_config(CONFIGS / f"{name}.yaml").container_caps()
    assert caps.runtimes == (RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31")),)
    [mpich] = caps.mpi
    assert (mpich.name, mpich.impl, mpich.version, mpich.launcher_argv) == (
        "mpich", MpiImpl.MPICH, version("4.0.2"), ("mpirun.mpich",))
    assert not caps.reaches_registries and not caps.gpus
    assert load_site_config(CONFIGS / "parnass2.yaml").container_caps().runtimes == ()
