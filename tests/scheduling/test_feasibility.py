import pytest

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import PartitionShape, SiteShape, partition_for, unfit_reason

SITE = SiteShape(name="s", max_nodes=4, cores_per_node=8, memory_mb_per_node=16000,
                 max_walltime=86400, mpi_launchers=frozenset({"mpirun"}),
                 mpi_flavors=frozenset({"mpich"}))


def job(resources: dict[str, object] | None = None, mpi: dict[str, object] | None = None
        ) -> JobSpec:
    return JobSpec.model_validate({"name": "j", "executable": "a", "resources": resources or {},
                                   "mpi": mpi or {}})


@pytest.mark.parametrize(
    ("resources", "mpi", "expected"),
    [
        ({}, {}, None),
        ({"nodes": 4, "ranks": 32}, {"launcher": "mpirun", "flavor": "mpich"}, None),
        ({"nodes": 5, "ranks": 5}, {}, "needs 5 nodes"),
        ({"ranks": 9}, {}, "needs 9 cores on one node"),
        ({"nodes": 2, "ranks": 8, "threads_per_rank": 4}, {}, "needs 16 cores"),
        ({"memory_mb": 32000}, {}, "32000 MiB"),
        # A site that declares no node scratch runs no job that asks for some.
        ({"scratch_mb": 1}, {}, "1 MiB of node-local scratch; site 's' declares none"),
        ({"walltime": "2-00:00:00"}, {}, "exceeds"),
        ({}, {"launcher": "srun"}, "launcher 'srun'"),
        ({}, {"launcher": "mpirun", "flavor": "openmpi"}, "flavor 'openmpi'"),
    ],
)
def test_unfit_reason(resources: dict[str, object], mpi: dict[str, object],
                      expected: str | None) -> None:
    reason = unfit_reason(job(resources, mpi), SITE)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_a_job_goes_to_the_default_partition_or_the_first_that_fits_it() -> None:
    # The testbed's roadrunner: `debug` (the default) stops at 30 min, `batch` at 7 days.
    debug = PartitionShape("debug", 1, 2, 512, 1800)
    site = SiteShape(name="s", max_nodes=2, cores_per_node=2, memory_mb_per_node=512,
                     max_walltime=7 * 86400, mpi_launchers=frozenset(), mpi_flavors=frozenset(),
                     partitions=(debug, PartitionShape("batch", 1, 2, 512, 7 * 86400),
                                 PartitionShape("wide", 2, 2, 512, 3600)))

    def where(resources: dict[str, object], partition: str | None = None) -> str | None:
        spec = job(resources)
        return partition_for(spec.model_copy(update={"partition": partition}), site)

    assert where({"walltime": 600}) is None  # the default fits: the scheduler's default
    assert where({"walltime": 3600}) == "batch"
    assert where({"walltime": 600, "nodes": 2, "ranks": 2}) == "wide"
    assert where({"walltime": 600}, "batch") == "batch"  # named: as named
    # Fits none (nor would the site take it): left to the scheduler, which says why.
    assert where({"walltime": 8 * 86400}) is None
    assert partition_for(job({"walltime": 3600}), SITE) is None  # no partitions known


def test_scratch_picks_the_partition_whose_nodes_have_it() -> None:
    small = PartitionShape("small", 1, 8, 4000, 86400, scratch_mb_per_node=1000)
    site = SiteShape(name="s", max_nodes=1, cores_per_node=8, memory_mb_per_node=4000,
                     max_walltime=86400, mpi_launchers=frozenset(), mpi_flavors=frozenset(),
                     partitions=(small, PartitionShape("bare", 1, 8, 4000, 86400),
                                 PartitionShape("disk", 1, 8, 4000, 86400, 50_000)),
                     scratch_mb_per_node=50_000)
    assert partition_for(job({"scratch_mb": 1000}), site) is None  # the default has it
    assert partition_for(job({"scratch_mb": 1001}), site) == "disk"
    assert unfit_reason(job({"scratch_mb": 50_000}), site) is None
    assert "has 50000 MiB" in (unfit_reason(job({"scratch_mb": 50_001}), site) or "")


def test_a_qos_must_be_one_the_site_offers() -> None:
    spec = JobSpec.model_validate({"name": "j", "executable": "a", "qos": "long"})
    assert unfit_reason(spec, SITE) == "QOS 'long' is not offered at site 's' (offers: none)"
    offering = SiteShape(**{**SITE.__dict__, "qos": frozenset({"normal", "long"})})
    assert unfit_reason(spec, offering) is None
    assert "(offers: long, normal)" in (unfit_reason(
        spec.model_copy(update={"qos": "urgent"}), offering) or "")
