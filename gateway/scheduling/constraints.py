"""Hard constraints: which sites can take a job now, and why each other one cannot (pure).

Routing's first stage (`gateway.scheduling.ranking` is the second): for a job and every
site, a `Candidate` that is either open (to be forecast and ranked) or excluded with a
sentence kept for the explanation. Each exclusion is also *lasting* or not:
- lasting: the job's shape or limits, its MPI flavor or launcher, no account for its
  owner, labels the site refuses or requires, a container image the site cannot run
  (`containers.compat`: its runtimes, its MPI's ABI family, bind paths, shared areas,
  GPUs). Only a change of the site's configuration
  lifts them, so a job every site excludes for such reasons is refused (POST /jobs says
  why for each site);
- passing: the site disabled or drained, unreachable (its circuit breaker open, or down
  when the worker last tried), out of routing for a while (a black hole: still open to
  a job no other site can take now, with a caution), it already
  failed this job, or (the bank on) the job's project cannot pay for it there now:
  balances change. A job that only lacks an open site waits for one.
Every candidate carries the job's quote at its site when the caller priced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from containers.binds import Bind, resolve
from containers.compat import ContainerNeeds, FetchAt, Fit, Refusal, check
from containers.errors import ContainerError
from containers.refs import RefKind, parse_image_ref
from containers.runtimes import LauncherKind, MpiMode, RuntimeKind
from containers.site_caps import SiteContainerCaps
from gateway.domain.container_spec import container_needs
from gateway.domain.jobspec import JobSpec, MpiLauncher
from gateway.scheduling.feasibility import SiteShape, unfit_reason
from gateway.scheduling.ranking import Candidate


@dataclass(frozen=True)
class LabelRules:
    """Job labels a site requires or refuses (site config `routing`), e.g. data residency.

    `requires`: key -> accepted values; a job must carry each key with one of them (any
    value when the set is empty). `refuses`: key -> refused values; a job carrying the key
    with one of them (any value when the set is empty) is refused.
    """

    requires: Mapping[str, frozenset[str]] = field(default_factory=dict)
    refuses: Mapping[str, frozenset[str]] = field(default_factory=dict)

    def problem(self, labels: Mapping[str, str], site: str) -> str | None:
        """Why `site` will not take a job with `labels`, or None."""
        for key, values in sorted(self.requires.items()):
            have = labels.get(key)
            if have is None or (values and have not in values):
                wanted = " or ".join(f"'{v}'" for v in sorted(values)) or "any value"
                got = "none" if have is None else f"'{have}'"
                return (f"site '{site}' only takes jobs labelled {key}={wanted} "
                        f"(this job: {got})")
        for key, values in sorted(self.refuses.items()):
            have = labels.get(key)
            if have is not None and (not values or have in values):
                return f"site '{site}' refuses jobs labelled {key}={have}"
        return None


@dataclass(frozen=True)
class SiteView:
    """One site as routing sees it now: its configuration and its current state."""

    name: str
    shape: SiteShape
    labels: LabelRules
    enabled: bool
    drained: bool
    # Why the site cannot be reached now (its breaker open, or down when last tried).
    unreachable: str | None = None
    # Why it is out of routing for a while (a black-hole ban), or None.
    banned: str | None = None
    # What container jobs find there (site config `containers`); None: no container jobs.
    containers: SiteContainerCaps | None = None
    # The zones it declares (site config `routing.zones`).
    zones: frozenset[str] = frozenset()


@dataclass(frozen=True)
class JobView:
    """What the constraints need of one job besides its spec."""

    spec: JobSpec
    # Why the job's owner has no account at each site that has none for them.
    no_account: Mapping[str, str] = field(default_factory=dict)
    # Sites where an attempt of this job failed.
    failed_at: frozenset[str] = frozenset()
    # What the job would cost at each priced site (milli-SU), for the explanation and
    # the `cheapest` policy.
    quotes: Mapping[str, int] = field(default_factory=dict)
    # Why the job's project cannot pay for it at each site where it cannot (the bank on).
    budget: Mapping[str, str] = field(default_factory=dict)
    # The projects each site runs jobs of, for each site that runs none of this job's.
    other_projects: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Screened:
    """A candidate, whether its exclusion lasts (see module), and the part of the spec a
    lasting one is about (what a refusal names)."""

    candidate: Candidate
    lasting: bool = False
    # The spec field a lasting exclusion is about; not part of what the exclusion is.
    about: str = field(default="resources", compare=False)


def container_fit(spec: JobSpec, caps: SiteContainerCaps | None, site: str) -> Fit | Refusal:
    """Whether and how the site `caps` declares runs the job's container (a spec with
    one): the program's image, and each step's own with the same runtime."""
    assert spec.container is not None
    fits = image_fits(spec, caps, site)
    return fits if isinstance(fits, Refusal) else fits[spec.container.image]


def image_fits(spec: JobSpec, caps: SiteContainerCaps | None, site: str
               ) -> dict[str, Fit] | Refusal:
    """How the site runs each image of the job's container (`ContainerSpec.images`), or
    why it cannot run one."""
    main = _program_fit(spec, caps, site)
    if isinstance(main, Refusal):
        return main
    assert spec.container is not None and caps is not None
    fits = {spec.container.image: main}
    for image in spec.container.images[1:]:
        try:
            fit = check(ContainerNeeds(parse_image_ref(image), MpiMode.NONE,
                                       runtime=main.runtime.kind, launcher=LauncherKind.NONE,
                                       gpus=spec.container.gpus), caps)
        except ContainerError as exc:
            return Refusal(f"site {site}: {exc.message}")
        if isinstance(fit, Refusal):
            return Refusal(f"a step's image {image}: {fit.reason}")
        fits[image] = fit
    return fits


def _program_fit(spec: JobSpec, caps: SiteContainerCaps | None, site: str) -> Fit | Refusal:
    """How the site runs the program's image. `mpi.launcher: mpirun` is the library's
    own launcher, whichever of mpirun or mpiexec the site's flavour lists (as `site_shape`
    reads it)."""
    container = spec.container
    assert container is not None
    if caps is None:
        return Refusal(f"site {site} offers no container runtime")
    try:
        for bind in container.binds:
            if bind.src.startswith("/"):
                resolve(Bind(bind.src, bind.dst, bind.read_only), "/job", caps.bind_prefixes)
        launcher = spec.mpi.launcher
        if launcher is not MpiLauncher.MPIRUN:
            return check(container_needs(container, spec.mpi.flavor,
                                         LauncherKind(launcher.value)), caps)
        fits = [check(container_needs(container, spec.mpi.flavor, kind), caps)
                for kind in (LauncherKind.MPIRUN, LauncherKind.MPIEXEC)]
    except ContainerError as exc:
        return Refusal(f"site {site}: {exc.message}")
    return next((f for f in fits if isinstance(f, Fit)), fits[0])


def _container_reason(spec: JobSpec, caps: SiteContainerCaps | None, site: str
                      ) -> str | None:
    if spec.container is None:
        return None
    fit = container_fit(spec, caps, site)
    return fit.reason if isinstance(fit, Refusal) else None


def screen(job: JobView, site: SiteView) -> Screened:
    """`site` for `job`: open, or excluded with a sentence (lasting or passing)."""
    name = site.name
    quote = job.quotes.get(name)
    reason, about = unfit_reason(job.spec, site.shape), "resources"
    zones = job.spec.routing.zones
    if reason is None and zones and name not in zones and not site.zones & set(zones):
        reason, about = (f"site '{name}' is not in the zones the job allows "
                         f"({', '.join(zones)})"), "routing"
    if reason is None and name in job.no_account:
        reason, about = f"site '{name}' has no account for you", "site"
    if reason is None and name in job.other_projects:
        reason, about = (f"site '{name}' runs jobs of the projects "
                         f"{job.other_projects[name]} only"), "project"
    if reason is None:
        reason, about = site.labels.problem(job.spec.labels, name), "labels"
    if reason is None:
        reason, about = _container_reason(job.spec, site.containers, name), "container"
    if reason is not None:
        return Screened(Candidate(name, reason, quote_milli=quote), True, about)
    return Screened(Candidate(name, _passing(job, site), quote_milli=quote,
                              image=image_route(job.spec, site.containers, name)))


def image_route(spec: JobSpec, caps: SiteContainerCaps | None, site: str) -> str | None:
    """A sentence when the gateway pulls the job's registry image for `site` (which cannot
    pull it itself) and stages it; None otherwise."""
    if spec.container is None or caps is None:
        return None
    ref = spec.container.ref
    fit = container_fit(spec, caps, site)
    if isinstance(fit, Refusal) or fit.fetch_at is not FetchAt.GATEWAY or ref.kind not in (
            RefKind.DOCKER, RefKind.ORAS):
        return None
    why = ("ch-run cannot pull" if fit.runtime.kind is RuntimeKind.CHARLIECLOUD
           else f"site {site} cannot reach registries")
    return f"{ref.uri} is pulled by the gateway and staged ({why})"


def _passing(job: JobView, site: SiteView) -> str | None:
    name = site.name
    if not site.enabled:
        return f"site '{name}' is disabled"
    if site.drained:
        return f"site '{name}' is drained (not accepting jobs)"
    if site.unreachable is not None:
        return f"site '{name}' is unreachable: {site.unreachable}"
    if site.banned is not None:
        return f"site '{name}' is out of routing: {site.banned}"
    if name in job.failed_at:
        return f"this job already failed at site '{name}'"
    return job.budget.get(name)


def screen_all(job: JobView, sites: Sequence[SiteView]) -> list[Screened]:
    """Every site for `job`, in the order given. A banned site is deprioritised, not
    removed: when no other site is open for the job, it is open again, with a caution."""
    screened = [screen(job, site) for site in sites]
    if any(s.candidate.excluded is None for s in screened):
        return screened
    return [_last_resort(job, site, s) if site.banned is not None else s
            for site, s in zip(sites, screened, strict=True)]


def _last_resort(job: JobView, site: SiteView, screened: Screened) -> Screened:
    unbanned = screen(job, replace(site, banned=None))
    if unbanned.candidate.excluded is not None:
        return screened
    caution = (f"site '{site.name}' is out of routing ({site.banned}), but no other site "
               "can take this job now")
    return replace(unbanned, candidate=replace(unbanned.candidate, caution=caution))


def candidates(job: JobView, sites: Sequence[SiteView]) -> list[Candidate]:
    """Every site for `job` as a Candidate (what `ranking.route_pass` takes)."""
    return [s.candidate for s in screen_all(job, sites)]


def refusal_field(screened: Sequence[Screened]) -> str:
    """The part of the spec a refusal is about: the one every site names, else resources."""
    fields = {s.about for s in screened}
    return fields.pop() if len(fields) == 1 else "resources"


def refusal(screened: Sequence[Screened]) -> str | None:
    """Why the job must be refused at once: every site excludes it for a lasting reason
    (or there is no site); None when some site is open or might open."""
    if any(not s.lasting for s in screened):
        return None
    reasons = "; ".join(s.candidate.excluded or "" for s in screened) or "no sites"
    return f"No site can run this job: {reasons}."
