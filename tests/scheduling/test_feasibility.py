import pytest

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import SiteShape, unfit_reason

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
