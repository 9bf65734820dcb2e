"""The routing function (first fit), table-driven: the messages are the ones POST /jobs
answers with, so they are asserted whole."""

from __future__ import annotations

import pytest

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import SiteShape
from gateway.scheduling.routing import Routed, SiteSnapshot, Unroutable, route


def shape(name: str, cores: int = 8) -> SiteShape:
    return SiteShape(name=name, max_nodes=1, cores_per_node=cores, memory_mb_per_node=None,
                     max_walltime_seconds=86400, mpi_launchers=frozenset(),
                     mpi_flavors=frozenset())


def site(name: str, *, cores: int = 8, enabled: bool = True, accepting: bool = True,
         problem: str | None = None) -> SiteSnapshot:
    return SiteSnapshot(name, shape(name, cores), enabled, accepting and enabled, problem)


def spec(site_name: str = "auto", ranks: int = 1) -> JobSpec:
    return JobSpec.model_validate({"name": "j", "executable": "a", "site": site_name,
                                   "resources": {"ranks": ranks}})


NO_ACCOUNT = "Site 'b' runs jobs under each user's own account and has none for you."


@pytest.mark.parametrize(("job", "sites", "expected"), [
    (spec(), [site("a"), site("b")], Routed("a")),
    (spec(), [site("a", accepting=False), site("b")], Routed("b")),
    (spec(), [site("a", problem=NO_ACCOUNT), site("b")], Routed("b")),
    (spec(ranks=16), [site("a"), site("b", cores=16)], Routed("b")),
    (spec(), [], Unroutable("No site can run this job: no sites.", "resources")),
    (spec(ranks=16), [site("a", accepting=False), site("b", problem=NO_ACCOUNT),
                      site("c")],
     Unroutable("No site can run this job: site 'a' is not accepting jobs; site 'b' has no "
                "account for you; needs 16 cores on one node (16 ranks x 1 threads); site "
                "'c' has 8 per node.", "resources")),
    (spec("b"), [site("a"), site("b")], Routed("b")),
    # A drained site still takes jobs named for it (they wait); a disabled one does not.
    (spec("b"), [site("a"), site("b", accepting=False)], Routed("b")),
    (spec("b"), [site("b", enabled=False)], Unroutable("Site 'b' is disabled.", "site")),
    (spec("b"), [site("b", problem=NO_ACCOUNT)], Unroutable(NO_ACCOUNT, "site")),
    (spec("z"), [site("b"), site("a")],
     Unroutable("Unknown site 'z'. Known sites: a, b.", "site")),
    (spec("b", ranks=16), [site("b")],
     Unroutable("No site can run this job: needs 16 cores on one node (16 ranks x 1 "
                "threads); site 'b' has 8 per node.", "resources")),
])
def test_route(job: JobSpec, sites: list[SiteSnapshot], expected: Routed | Unroutable) -> None:
    assert route(job, sites) == expected
