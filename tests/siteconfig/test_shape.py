"""site_shape: what the feasibility check knows about a configured site."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import PartitionShape, SiteShape, unfit_reason
from gateway.siteconfig import load_site_config, site_shape, validate_site_config
from gateway.siteconfig.shape import UNLIMITED_WALLTIME_SECONDS

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"


def test_shape_takes_the_maxima_over_partitions(good: dict[str, Any]) -> None:
    shape = site_shape(validate_site_config(good))
    assert shape == SiteShape(
        name="alpha", max_nodes=8, cores_per_node=32, memory_mb_per_node=128000,
        max_walltime=2 * 86400, mpi_launchers=frozenset({"mpirun", "srun"}),
        mpi_flavors=frozenset({"openmpi", "mpich"}),
        # Each partition's own, the default first.
        partitions=(PartitionShape("debug", 2, 16, 64000, 1800),
                    PartitionShape("long", 8, 32, 128000, 2 * 86400)))


def test_scratch_is_the_largest_a_partition_declares(good: dict[str, Any]) -> None:
    assert site_shape(validate_site_config(good)).scratch_mb_per_node is None
    good["partitions"][1]["scratch_mb_per_node"] = 400_000
    shape = site_shape(validate_site_config(good))
    assert shape.scratch_mb_per_node == 400_000
    assert [p.scratch_mb_per_node for p in shape.partitions] == [None, 400_000]


def test_unlimited_walltime_and_mpiexec(good: dict[str, Any]) -> None:
    good["partitions"][0]["max_walltime"] = "UNLIMITED"
    good["mpi_flavors"] = [{"name": "impi", "launchers": ["mpiexec"]}]
    shape = site_shape(validate_site_config(good))
    assert shape.max_walltime == UNLIMITED_WALLTIME_SECONDS
    # Jobs ask for the library's own launcher as `mpirun`; mpiexec is that launcher.
    assert shape.mpi_launchers == frozenset({"mpiexec", "mpirun"})
    assert shape.mpi_flavors == frozenset({"impi"})


def test_no_mpi_no_launchers(good: dict[str, Any]) -> None:
    good["mpi_flavors"] = []
    shape = site_shape(validate_site_config(good))
    assert shape.mpi_launchers == frozenset() and shape.mpi_flavors == frozenset()


def test_shape_of_a_shipped_seed() -> None:
    shape = site_shape(load_site_config(CONFIGS / "seeds" / "unm-roadrunner.yaml"))
    assert (shape.name, shape.max_nodes, shape.cores_per_node, shape.memory_mb_per_node) == \
        ("unm-roadrunner", 64, 2, 512)
    assert shape.mpi_flavors == frozenset({"mpich", "mpich-pgi", "mpich-gm", "mpich-gm-pgi"})


def _spec(**resources: Any) -> JobSpec:
    return JobSpec.model_validate({
        "name": "pingpong", "executable": "./pingpong", "resources": resources,
        "mpi": {"launcher": "srun", "flavor": "openmpi"}})


def test_feasibility_of_jobs_against_a_testbed_site() -> None:
    shape = site_shape(load_site_config(CONFIGS / "parnass2.yaml"))
    assert unfit_reason(_spec(nodes=1, ranks=2, walltime=600), shape) is None
    too_many = unfit_reason(_spec(nodes=2, ranks=2), shape)
    assert too_many is not None and "at most 1" in too_many
    too_long = unfit_reason(_spec(ranks=2, walltime="2-00:00:00"), shape)
    assert too_long is not None and "limit of 86400 s" in too_long
    too_big = unfit_reason(_spec(ranks=2, memory_mb=1024), shape)
    assert too_big is not None and "256 MiB" in too_big
    galaxy = site_shape(load_site_config(CONFIGS / "galaxy.yaml"))
    no_srun = unfit_reason(_spec(ranks=2), galaxy)
    assert no_srun is not None and "launcher 'srun'" in no_srun
