"""Admission: may a new job be accepted, and where does it wait (pure).

Routing happens at dispatch, in the worker (`gateway.worker.route`), not here: a
`site: auto` job is accepted with no site, and a routing pass places it later over fresh
per-site snapshots. Admission only refuses at once what no routing pass could ever place
(the lasting exclusions of `gateway.scheduling.constraints`), saying why for each site:
- a job naming its site is pinned there: refused when the site is unknown or disabled,
  has no account for the owner, can never run the job, refuses its labels or cannot run
  its container image; a drained or unreachable site keeps it waiting;
- a `site: auto` job is refused only when every site excludes it for a lasting reason;
  one that only lacks an open site now waits for one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from containers.compat import Refusal
from gateway.domain.jobspec import JobSpec
from gateway.scheduling.constraints import (
    JobView,
    SiteView,
    container_fit,
    refusal,
    refusal_field,
    screen_all,
)
from gateway.scheduling.feasibility import unfit_reason


@dataclass(frozen=True)
class Admitted:
    """The job is accepted: at its named site, or (None) to be routed."""

    site: str | None


@dataclass(frozen=True)
class Unroutable:
    """No site: `reason` is a sentence for the user about the spec's `field`."""

    reason: str
    field: str


Admission = Admitted | Unroutable


def admit(spec: JobSpec, sites: Sequence[SiteView], no_account: Mapping[str, str],
          other_projects: Mapping[str, str] | None = None) -> Admission:
    """Whether `spec` is accepted (see module). `no_account`: site -> why the owner has
    no account there, for each site that has none for them; `other_projects`: site ->
    the projects it runs jobs of, for each site that runs none of the job's project's."""
    other_projects = other_projects or {}
    if spec.pinned:
        return _pinned(spec, sites, no_account, other_projects)
    screened = screen_all(JobView(spec, no_account, other_projects=other_projects), sites)
    problem = refusal(screened)
    if problem is not None:
        return Unroutable(problem, refusal_field(screened))
    return Admitted(None)


def _pinned(spec: JobSpec, sites: Sequence[SiteView], no_account: Mapping[str, str],
            other_projects: Mapping[str, str]) -> Admission:
    name = spec.site
    site = next((s for s in sites if s.name == name), None)
    if site is None:
        known = ", ".join(sorted(s.name for s in sites)) or "none"
        return Unroutable(f"Unknown site '{name}'. Known sites: {known}.", "site")
    if not site.enabled:
        return Unroutable(f"Site '{name}' is disabled.", "site")
    if name in no_account:
        return Unroutable(no_account[name], "site")
    if name in other_projects:
        return Unroutable(f"Site '{name}' runs jobs of the projects {other_projects[name]} "
                          "only; name one of them in 'project' if you are a member, or "
                          "choose another site.", "project")
    reason = unfit_reason(spec, site.shape)
    if reason:
        return Unroutable(f"No site can run this job: {reason}.", "resources")
    labelled = site.labels.problem(spec.labels, name)
    if labelled:
        return Unroutable(labelled[0].upper() + labelled[1:] + ".", "labels")
    if spec.container is not None:
        fit = container_fit(spec, site.containers, name)
        if isinstance(fit, Refusal):
            return Unroutable(f"No site can run this job: {fit.reason}.", "container")
    return Admitted(name)
