"""Hard constraints, table-driven: each exclusion's sentence (it is what the explanation
shows) and whether it lasts (a job every site excludes for lasting reasons is refused)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import ValidationError

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.constraints import (
    JobView,
    LabelRules,
    Screened,
    SiteView,
    candidates,
    refusal,
    screen,
    screen_all,
)
from gateway.scheduling.feasibility import SiteShape
from gateway.scheduling.ranking import Candidate


def view(name: str = "s", *, labels: LabelRules | None = None, enabled: bool = True,
         drained: bool = False, unreachable: str | None = None, banned: str | None = None,
         launchers: frozenset[str] = frozenset({"mpirun"}),
         flavors: frozenset[str] = frozenset({"mpich"})) -> SiteView:
    shape = SiteShape(name, max_nodes=4, cores_per_node=8, memory_mb_per_node=4096,
                      max_walltime=7200, mpi_launchers=launchers, mpi_flavors=flavors)
    return SiteView(name, shape, labels or LabelRules(), enabled, drained, unreachable, banned)


def job(no_account: dict[str, str] | None = None, failed_at: frozenset[str] = frozenset(),
        budget: dict[str, str] | None = None, **spec: Any) -> JobView:
    return JobView(JobSpec.model_validate({"name": "j", "executable": "a", **spec}),
                   no_account or {}, failed_at, budget=budget or {})


NO_FUNDS = "project 'x' has 3.000 SU available at 's'; this job would cost 8.000 SU"


RESIDENCY = LabelRules(requires={"residency": frozenset({"eu", "ch"})})
ANY_CLASS = LabelRules(requires={"class": frozenset()})
REFUSES_EXPORT = LabelRules(refuses={"export": frozenset()})
REFUSES_US = LabelRules(refuses={"residency": frozenset({"us"})})


@pytest.mark.parametrize(("job_view", "site", "excluded", "lasting"), [
    (job(), view(), None, False),
    (job(resources={"nodes": 5, "ranks": 5}), view(),
     "needs 5 nodes; site 's' has at most 4", True),
    (job(resources={"walltime": 7201}), view(),
     "walltime 7201 s exceeds site 's' limit of 7200 s", True),
    (job(mpi={"launcher": "srun"}), view(),
     "MPI launcher 'srun' is not available at site 's'", True),
    (job(mpi={"launcher": "mpirun", "flavor": "openmpi"}), view(),
     "MPI flavor 'openmpi' is not available at site 's' (has: mpich)", True),
    (job({"s": "long sentence"}), view(), "site 's' has no account for you", True),
    (JobView(JobSpec(name="j", executable="a"), other_projects={"s": "alpha, beta"}), view(),
     "site 's' runs jobs of the projects alpha, beta only", True),
    (job(labels={"residency": "us"}), view(labels=RESIDENCY),
     "site 's' only takes jobs labelled residency='ch' or 'eu' (this job: 'us')", True),
    (job(), view(labels=RESIDENCY),
     "site 's' only takes jobs labelled residency='ch' or 'eu' (this job: none)", True),
    (job(labels={"residency": "ch"}), view(labels=RESIDENCY), None, False),
    (job(), view(labels=ANY_CLASS),
     "site 's' only takes jobs labelled class=any value (this job: none)", True),
    (job(labels={"class": "x"}), view(labels=ANY_CLASS), None, False),
    (job(labels={"export": "no"}), view(labels=REFUSES_EXPORT),
     "site 's' refuses jobs labelled export=no", True),
    (job(labels={"residency": "eu"}), view(labels=REFUSES_US), None, False),
    (job(labels={"residency": "us"}), view(labels=REFUSES_US),
     "site 's' refuses jobs labelled residency=us", True),
    (job(), view(enabled=False), "site 's' is disabled", False),
    (job(), view(drained=True), "site 's' is drained (not accepting jobs)", False),
    (job(), view(unreachable="site s unreachable since 2026-11-24T22:00:00Z"),
     "site 's' is unreachable: site s unreachable since 2026-11-24T22:00:00Z", False),
    (job(), view(banned="3 jobs in a row failed"),
     "site 's' is out of routing: 3 jobs in a row failed", False),
    (job(failed_at=frozenset({"s"})), view(), "this job already failed at site 's'", False),
    # The project cannot pay there now: passing (balances change), the sentence as given.
    (job(budget={"s": NO_FUNDS}), view(), NO_FUNDS, False),
    (job(budget={"elsewhere": NO_FUNDS}), view(), None, False),
    # What the site itself says comes first; a lasting reason before any of them.
    (job(budget={"s": NO_FUNDS}), view(drained=True),
     "site 's' is drained (not accepting jobs)", False),
    (job(budget={"s": NO_FUNDS}, resources={"walltime": 7201}), view(),
     "walltime 7201 s exceeds site 's' limit of 7200 s", True),
    # A lasting reason is reported before a passing one.
    (job(resources={"nodes": 5, "ranks": 5}), view(drained=True),
     "needs 5 nodes; site 's' has at most 4", True),
])
def test_screen(job_view: JobView, site: SiteView, excluded: str | None,
                lasting: bool) -> None:
    assert screen(job_view, site) == Screened(Candidate("s", excluded), lasting)


def test_refusal_only_when_every_site_is_excluded_for_good() -> None:
    big = job(resources={"nodes": 5, "ranks": 5})
    assert refusal([screen(big, view("a")), screen(big, view("b", drained=True))]) == (
        "No site can run this job: needs 5 nodes; site 'a' has at most 4; needs 5 nodes; "
        "site 'b' has at most 4.")
    drained = job()
    assert refusal([screen(drained, view("a", drained=True))]) is None
    assert refusal([]) == "No site can run this job: no sites."
    assert candidates(drained, [view("a"), view("b", enabled=False)]) == [
        Candidate("a"), Candidate("b", "site 'b' is disabled")]


def test_each_candidate_carries_its_quote_excluded_or_not() -> None:
    spec = JobSpec.model_validate({"name": "j", "executable": "a"})
    priced = JobView(spec, {"b": "no"}, quotes={"a": 8000, "b": 2000, "c": 500},
                     budget={"c": NO_FUNDS})
    assert candidates(priced, [view("a"), view("b"), view("c"), view("d")]) == [
        Candidate("a", quote_milli=8000),
        Candidate("b", "site 'b' has no account for you", quote_milli=2000),
        Candidate("c", NO_FUNDS, quote_milli=500),
        Candidate("d")]


def test_a_banned_site_is_deprioritised_not_removed() -> None:
    banned = view("b", banned="3 jobs of 2 users failed")
    # Another site is open: the banned one stays out.
    screened = screen_all(job(), [banned, view("o")])
    assert [s.candidate.excluded for s in screened] == [
        "site 'b' is out of routing: 3 jobs of 2 users failed", None]
    # It is the last site open for the job: open, with a caution the decision repeats.
    for others in ([], [view("o", drained=True)], [view("o", enabled=False)]):
        screened = screen_all(job(), [banned, *others])
        first = screened[0].candidate
        assert first.excluded is None and first.caution == (
            "site 'b' is out of routing (3 jobs of 2 users failed), but no other site can "
            "take this job now")
    # Not when something else keeps it out for this job too.
    for job_view in (job(failed_at=frozenset({"b"})), job(budget={"b": NO_FUNDS})):
        assert screen_all(job_view, [banned])[0].candidate.excluded is not None


def test_zones_name_sites_or_the_zones_they_declare() -> None:
    def in_zones(name: str, *zones: str) -> SiteView:
        return dataclasses.replace(view(name), zones=frozenset(zones))

    sites = [in_zones("kth", "eu", "eu-north"), in_zones("sdsc", "us"), in_zones("ctc")]
    wanted = job(routing={"zones": ["eu", "ctc"]})
    assert [(s.candidate.site, s.candidate.excluded, s.lasting, s.about)
            for s in screen_all(wanted, sites)] == [
        ("kth", None, False, "resources"),
        ("sdsc", "site 'sdsc' is not in the zones the job allows (eu, ctc)", True, "routing"),
        ("ctc", None, False, "resources")]
    assert refusal(screen_all(job(routing={"zones": ["mars"]}), sites)) is not None
    with pytest.raises(ValidationError, match=r"drop 'routing\.zones'"):
        JobSpec.model_validate({"name": "j", "executable": "a", "site": "kth",
                                "routing": {"zones": ["eu"]}})
    with pytest.raises(ValidationError):
        JobSpec.model_validate({"name": "j", "executable": "a",
                                "routing": {"zones": ["eu\n"]}})
