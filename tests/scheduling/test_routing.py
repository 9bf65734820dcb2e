"""Admission, table-driven: the messages are the ones POST /jobs answers with, so they are
asserted whole. Issue 12: a `site: auto` job is no longer placed here (first fit) but
accepted with no site (`Admitted(None)`) unless every site excludes it for a lasting
reason; a job naming its site is checked as before."""

from __future__ import annotations

import pytest

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.admission import Admission, Admitted, Unroutable, admit
from gateway.scheduling.constraints import LabelRules, SiteView
from gateway.scheduling.feasibility import SiteShape


def shape(name: str, cores: int = 8) -> SiteShape:
    return SiteShape(name=name, max_nodes=1, cores_per_node=cores, memory_mb_per_node=None,
                     max_walltime=86400, mpi_launchers=frozenset(),
                     mpi_flavors=frozenset())


def site(name: str, *, cores: int = 8, enabled: bool = True, accepting: bool = True,
         refuses: dict[str, frozenset[str]] | None = None) -> SiteView:
    return SiteView(name, shape(name, cores), LabelRules(refuses=refuses or {}), enabled,
                    not accepting)


def spec(site_name: str = "auto", ranks: int = 1, **labels: str) -> JobSpec:
    return JobSpec.model_validate({"name": "j", "executable": "a", "site": site_name,
                                   "resources": {"ranks": ranks}, "labels": labels})


NO_ACCOUNT = "Site 'b' runs jobs under each user's own account and has none for you."
EU = {"residency": frozenset({"eu"})}


@pytest.mark.parametrize(("job", "sites", "accounts", "expected"), [
    (spec(), [site("a"), site("b")], {}, Admitted(None)),
    # Only passing exclusions: the job waits for a site to open.
    (spec(), [site("a", accepting=False), site("b", enabled=False)], {}, Admitted(None)),
    (spec(ranks=16), [site("a", accepting=False), site("b"), site("c", cores=16)],
     {"b": NO_ACCOUNT}, Admitted(None)),
    (spec(), [], {}, Unroutable("No site can run this job: no sites.", "resources")),
    (spec(ranks=16, residency="eu"),
     [site("a", cores=32, refuses=EU), site("b", cores=32), site("c")], {"b": NO_ACCOUNT},
     Unroutable("No site can run this job: site 'a' refuses jobs labelled residency=eu; "
                "site 'b' has no account for you; needs 16 cores on one node (16 ranks x 1 "
                "threads); site 'c' has 8 per node.", "resources")),
    (spec("b"), [site("a"), site("b")], {}, Admitted("b")),
    # A drained site still takes jobs named for it (they wait); a disabled one does not.
    (spec("b"), [site("a"), site("b", accepting=False)], {}, Admitted("b")),
    (spec("b"), [site("b", enabled=False)], {}, Unroutable("Site 'b' is disabled.", "site")),
    (spec("b"), [site("b")], {"b": NO_ACCOUNT}, Unroutable(NO_ACCOUNT, "site")),
    (spec("z"), [site("b"), site("a")], {},
     Unroutable("Unknown site 'z'. Known sites: a, b.", "site")),
    (spec("b", ranks=16), [site("b")], {},
     Unroutable("No site can run this job: needs 16 cores on one node (16 ranks x 1 "
                "threads); site 'b' has 8 per node.", "resources")),
    (spec("b", residency="eu"), [site("b", refuses=EU)], {},
     Unroutable("Site 'b' refuses jobs labelled residency=eu.", "labels")),
])
def test_admit(job: JobSpec, sites: list[SiteView], accounts: dict[str, str],
               expected: Admission) -> None:
    assert admit(job, sites, accounts) == expected


def test_a_site_of_other_projects_refuses_a_job_named_for_it_and_routing_passes_it_by(
        ) -> None:
    others = {"b": "alpha, beta"}
    assert admit(spec("b"), [site("a"), site("b")], {}, others) == Unroutable(
        "Site 'b' runs jobs of the projects alpha, beta only; name one of them in 'project' "
        "if you are a member, or choose another site.", "project")
    assert admit(spec(), [site("a"), site("b")], {}, others) == Admitted(None)
    assert admit(spec(), [site("b")], {}, others) == Unroutable(
        "No site can run this job: site 'b' runs jobs of the projects alpha, beta only.",
        "project")
