"""Routing: which site runs a job. Pure: the job's requirements and a snapshot of every
site in, a site or the reason there is none out.

Today's policy is first fit: a job naming a site goes there if that site is enabled,
has an account for its owner and can run it; a `site: auto` job goes to the first site
(in configuration order) that is accepting jobs, serves its owner and can run it. The
metascheduler replaces this function and nothing around it: the API calls it to admit a
job (a 422 that says why, or the placement shown in the 202), and the worker's routing
step calls it again for jobs still waiting (`gateway.worker.route`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import SiteShape, unfit_reason

AUTO = "auto"


@dataclass(frozen=True)
class SiteSnapshot:
    """One site as routing sees it now."""

    name: str
    shape: SiteShape
    enabled: bool
    accepting: bool  # enabled and not drained
    # Why this job's owner cannot run jobs at the site (no mapped account, an unconfined
    # local site), or None when they can.
    account_problem: str | None


@dataclass(frozen=True)
class Routed:
    site: str


@dataclass(frozen=True)
class Unroutable:
    """No site: `reason` is a sentence for the user about the spec's `field`."""

    reason: str
    field: str


Route = Routed | Unroutable


def route(spec: JobSpec, sites: Sequence[SiteSnapshot]) -> Route:
    """Where `spec` runs, first fit over `sites` (see module)."""
    if spec.site != AUTO:
        return _pinned(spec, spec.site, sites)
    reasons = []
    for site in sites:
        if not site.accepting:
            reasons.append(f"site '{site.name}' is not accepting jobs")
            continue
        if site.account_problem is not None:
            reasons.append(f"site '{site.name}' has no account for you")
            continue
        reason = unfit_reason(spec, site.shape)
        if reason is None:
            return Routed(site.name)
        reasons.append(reason)
    return Unroutable("No site can run this job: " + ("; ".join(reasons) or "no sites") + ".",
                      "resources")


def _pinned(spec: JobSpec, name: str, sites: Sequence[SiteSnapshot]) -> Route:
    site = next((s for s in sites if s.name == name), None)
    if site is None:
        known = ", ".join(sorted(s.name for s in sites)) or "none"
        return Unroutable(f"Unknown site '{name}'. Known sites: {known}.", "site")
    if not site.enabled:
        return Unroutable(f"Site '{name}' is disabled.", "site")
    if site.account_problem is not None:
        return Unroutable(site.account_problem, "site")
    reason = unfit_reason(spec, site.shape)
    if reason:
        return Unroutable(f"No site can run this job: {reason}.", "resources")
    return Routed(name)
