"""Placement: admission of new jobs, and the routing pass that gives `site: auto` jobs
their site, fed with the sites as they are now.

The API admits a job (`admit`): a job no routing pass could ever place is refused at
once, saying why for each site; a `site: auto` job is accepted with no site. The worker's
routing step (`gateway.worker.route`) calls `route_pending`: one pass over the pending
jobs, oldest first, through `ranking.route_pass` (hard constraints, then forecasts and
the job's policy), recording each decision (a `placements` row and a job event).

Routed once, submitted once: a pass locks the jobs it routes (FOR UPDATE SKIP LOCKED,
so concurrent workers take disjoint sets) and commits each job's site, its decision and
its event in one unit of work; a worker that dies before the commit routed nothing (the
next pass routes the job), and one that dies after it left an ACCEPTED job at its site,
which the claim step takes exactly once (gateway.services.lifecycle). Only ACCEPTED jobs
are routed, and a claim moves a job out of ACCEPTED in the unit of work that creates its
attempt, so routing never moves a job that has an attempt. A job is routed again only
when the site it was placed at stops accepting jobs before it is claimed there.

Money (gateway.services.money.budget): a job is priced at every site when the bank is on or
its policy is `cheapest`; with the bank on, a site its project cannot pay at is excluded
for the pass, and the job's lien is drawn again for the chosen site in the unit of work
that places it (a site that can no longer pay by then is excluded, and the next choice
tried).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import ValidationError
from sqlalchemy.orm import Session

from gateway.accounting.requested import requested
from gateway.db.models import Job, Site
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import (
    JobSpec,
    deadline_problem,
    launcher_problem,
)
from gateway.domain.states import JobState, Reason
from gateway.repositories import sites as site_rows
from gateway.repositories.identity import projects
from gateway.repositories.jobs import attempts, placements, targets
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.placements import NewPlacement
from gateway.repositories.jobs.rows import OwnedJob
from gateway.repositories.sites import CLOSED, Admission
from gateway.scheduling.admission import Admitted
from gateway.scheduling.admission import admit as admission
from gateway.scheduling.black_holes import Ban
from gateway.scheduling.constraints import JobView, Screened, SiteView, screen, screen_all
from gateway.scheduling.guest_ledger import guest_work
from gateway.scheduling.policies import registry as policies
from gateway.scheduling.ranking import (
    Candidate,
    Decision,
    Forecaster,
    Routing,
    forecast_every_site,
    rank,
    route_pass,
)
from gateway.schemas.placements import EstimateOut
from gateway.services.lifecycle.transitions import advance, note
from gateway.services.money import budget
from gateway.services.money.bank import Payer
from gateway.services.money.budget import Books
from gateway.services.routing.decisions import deadline_in, estimate_out, new_placement
from gateway.services.routing.site_bans import black_holes
from gateway.services.sites.entry import NoAccount
from gateway.services.sites.registry import SiteRegistry


@dataclass(frozen=True)
class Pending:
    """A job in a routing pass: its spec, owner and what the constraints need."""

    job_id: str
    spec: JobSpec
    owner: str | None
    owner_id: str
    view: JobView
    created_at: datetime


# Builds the pass's forecaster from fresh per-site state (gateway.services.routing.forecasting).
ForecasterFactory = Callable[[Session, SiteRegistry, Sequence[Pending], datetime],
                             Forecaster[Pending]]


def site_views(registry: SiteRegistry, flags: Mapping[str, Admission],
               down: Mapping[str, str] | None = None,
               banned: Mapping[str, Ban] | None = None) -> list[SiteView]:
    """Every configured site, in configuration order, as routing sees it now: its flags,
    (`down`: site -> why) whether it can be reached now and (`banned`) whether it is out
    of routing as a black hole."""
    down, banned = down or {}, banned or {}
    return [SiteView(e.name, e.shape, e.labels, flags.get(e.name, CLOSED).enabled,
                     flags.get(e.name, CLOSED).drained, down.get(e.name),
                     banned[e.name].reason if e.name in banned else None, e.containers,
                     e.zones)
            for e in registry]


def no_account(registry: SiteRegistry, username: str | None) -> dict[str, str]:
    """Site -> why this user has no account there, for each site that has none."""
    found = {}
    for entry in registry:
        try:
            entry.adapter_for(username)
        except NoAccount as exc:
            found[entry.name] = exc.detail
    return found


def other_projects(registry: SiteRegistry, project: str | None) -> dict[str, str]:
    """Site -> the projects it runs jobs of, for each site that runs none of `project`'s
    (site config `accounts.projects`)."""
    return {entry.name: ", ".join(sorted(entry.projects))
            for entry in registry if not entry.takes(project)}


def possible_sites(registry: SiteRegistry, spec: JobSpec, username: str | None,
                   project: str) -> list[str]:
    """The sites the job may ever run at: the one it names, or (auto) every site that
    does not exclude it for a lasting reason (shape, account, project, labels)."""
    if spec.pinned:
        return [spec.site] if spec.site else []
    view = JobView(spec, no_account(registry, username),
                   other_projects=other_projects(registry, project))
    return [site.name for site in site_views(registry, {})
            if not screen(view, site).lasting]


def admit(session: Session, registry: SiteRegistry, spec: JobSpec, username: str | None,
          project: str | None, now: datetime) -> str | None:
    """The site a new job waits at (None: a routing pass places it); Invalid (422)
    saying why when no routing pass could ever place it."""
    problem = deadline_problem(spec.routing, now)
    if problem is not None:
        raise Invalid(problem, field="routing.deadline")
    decided = admission(spec, site_views(registry, registry.admission(session)),
                        no_account(registry, username), other_projects(registry, project))
    if not isinstance(decided, Admitted):
        raise Invalid(decided.reason, field=decided.field)
    # After the sites' verdict: a shape no site can run says so first.
    problem = launcher_problem(spec)
    if problem is not None:
        raise Invalid(problem, field="mpi.launcher")
    return decided.site


def _policy(spec: JobSpec, now: datetime) -> tuple[str, int, float | None]:
    routing = spec.routing
    return str(routing.policy), routing.hedge, deadline_in(routing.deadline, now)


def _money(session: Session, registry: SiteRegistry, books: Books | None, job_id: str,
           project_id: int | None, spec: JobSpec, sites: Sequence[str]
           ) -> tuple[dict[str, int], dict[str, str]]:
    """The job's quote at each site (when the bank is on or its policy ranks on price,
    `cheapest`), and, the bank on, why its project cannot pay at each site where it
    cannot."""
    if books is None and not policies.policy(spec.routing.policy).priced:
        return {}, {}  # nobody asked: no rate card is read
    quoted = budget.priced(session, spec, sites, registry.rate_cards)
    if books is None or project_id is None:
        return quoted, {}
    return quoted, books.unpayable(job_id, project_id, quoted, sites)


def estimate(session: Session, registry: SiteRegistry, spec: JobSpec, username: str | None,
             owner_id: str, make_forecaster: ForecasterFactory, now: datetime,
             unreachable: Mapping[str, str] | None = None, charged: bool = False
             ) -> EstimateOut:
    """What a routing pass would decide for `spec` now: every site excluded (and why) or
    forecast, and the choice. Nothing is stored or submitted. A spec naming its site is
    estimated at that site only. `charged`: the bank is on (each site priced, and
    excluded where the job's project cannot pay for it)."""
    payer = budget.payer_of(session, owner_id, spec.project)
    project = spec.project if payer is None else payer.project_name
    admit(session, registry, spec, username, project, now)
    views = site_views(registry, _flags(site_rows.all_sites(session)), unreachable,
                       black_holes(session, registry, now))
    if spec.pinned:  # a ban never applies to a job that names its site
        views = [replace(v, banned=None) for v in views if v.name == spec.site]
    names = [v.name for v in views]
    if not charged:
        quoted, unpayable = _money(session, registry, None, "", None, spec, names)
    else:
        quoted, unpayable = budget.priced(session, spec, names, registry.rate_cards), {}
        if payer is not None:  # else no project to charge it to: submitting says why
            books = budget.open_books(session, {"": payer.project_id}, now, lock=False)
            unpayable = books.unpayable("", payer.project_id, quoted, names)
    job = Pending("", spec, username, owner_id,
                  JobView(spec, no_account(registry, username), quotes=quoted,
                          budget=unpayable, other_projects=other_projects(registry, project)),
                  now)
    hedge = spec.routing.hedge
    return estimate_out(_decide(session, registry, job, views, make_forecaster, now, hedge),
                        now, hedge, spec.routing.deadline)


def decide_elsewhere(session: Session, registry: SiteRegistry, owned: OwnedJob, spec: JobSpec,
                     avoid: Mapping[str, str], make_forecaster: ForecasterFactory,
                     now: datetime, books: Books | None = None) -> Decision:
    """A decision for one job (failover) over every site but those in `avoid` (site ->
    why not), by the job's policy; nothing is recorded. `books`: the bank is on (each
    candidate priced; excluded where the job's project cannot pay)."""
    views = site_views(registry, _flags(site_rows.all_sites(session)), avoid,
                       black_holes(session, registry, now))
    quoted, unpayable = _money(session, registry, books, owned.job.id, owned.job.project_id,
                               spec, registry.names())
    project = projects.names(session, [owned.job.project_id]).get(owned.job.project_id)
    job = Pending(owned.job.id, spec, owned.owner, owned.owner_id,
                  JobView(spec, no_account(registry, owned.owner), quotes=quoted,
                          other_projects=other_projects(registry, project),
                          budget=unpayable), owned.job.created_at)
    return _decide(session, registry, job, views, make_forecaster, now, hedge=1)


def _at_home(candidates: Sequence[Candidate], home: str | None) -> list[Candidate]:
    """`candidates` with the job's home marked: where its owner's jobs ran last (a job
    leaves it only for a gain its forecasts vouch for: policies/home_guard.py)."""
    return [replace(c, home=True) if c.site == home else c for c in candidates]


def _decide(session: Session, registry: SiteRegistry, job: Pending, views: list[SiteView],
            make_forecaster: ForecasterFactory, now: datetime, hedge: int) -> Decision:
    """One job's decision over `views`, alone (no pass: nothing else committed)."""
    forecaster = make_forecaster(session, registry, [job], now)
    home = attempts.home_sites(session, [job.owner_id]).get(job.owner_id)
    candidates = [c if c.excluded is not None
                  else replace(c, forecast=forecaster.forecast(job, c.site))
                  for c in _at_home([s.candidate for s in screen_all(job.view, views)],
                                    home)]
    policy, _, deadline = _policy(job.spec, now)
    return rank(candidates, policy, hedge, deadline)


def _flags(rows: Sequence[Site]) -> dict[str, Admission]:
    return {r.name: Admission(r.enabled, r.drained) for r in rows}


@dataclass(frozen=True)
class PassResult:
    """What a routing pass did: jobs placed, and jobs failed (no site could ever run them)."""

    placed: int
    failed: int


def accepting_sites(session: Session, registry: SiteRegistry) -> list[str]:
    """The sites accepting jobs now (the ones to snapshot before routing)."""
    flags = _flags(site_rows.all_sites(session))
    return [e.name for e in registry if flags.get(e.name, CLOSED).accepting]


def open_sites(session: Session, registry: SiteRegistry) -> list[str] | None:
    """The sites accepting jobs now, or None when no job waits for a routing pass."""
    names = accepting_sites(session, registry)
    closed = [e.name for e in registry if e.name not in names]
    return names if jobs.any_unrouted(session, closed) else None


def route_pending(session: Session, registry: SiteRegistry,
                  make_forecaster: ForecasterFactory, actor: str, limit: int,
                  now: datetime, unreachable: Mapping[str, str] | None = None,
                  charged: bool = False) -> PassResult:
    """One routing pass over up to `limit` pending `site: auto` jobs, oldest first (see
    module): those not placed yet, and those placed at a site that has since stopped
    accepting jobs. `unreachable`: site -> why it cannot be reached now (this cycle's
    snapshots); `charged`: the bank is on. Flushes; the caller's unit of work commits."""
    flags = _flags(site_rows.all_sites(session))  # fresh: the API's cache may lag
    closed = [e.name for e in registry if not flags.get(e.name, CLOSED).accepting]
    owned = jobs.lock_unrouted(session, closed, limit)
    if not owned:
        return PassResult(0, 0)
    views = site_views(registry, flags, unreachable, black_holes(session, registry, now))
    failed_at = attempts.failed_sites(session, [o.job.id for o in owned])
    project_names = projects.names(session, {o.job.project_id for o in owned})
    books = (budget.open_books(session, {o.job.id: o.job.project_id for o in owned}, now,
                               lock=True) if charged else None)
    names = registry.names()
    by_id: dict[str, Job] = {}
    pending: list[Pending] = []
    failed = 0
    for item in owned:
        job = item.job
        try:
            spec = jobs.stored_spec(job.spec)
        except ValidationError as exc:  # stored under older rules: say why, once
            problem = "; ".join(str(e["msg"]) for e in exc.errors()[:3])
            advance(session, job, JobState.FAILED, actor=actor, at=now,
                    reason=f"{Reason.SUBMIT_REJECTED}: the job spec is no longer accepted: "
                           f"{problem}")
            failed += 1
            continue
        by_id[job.id] = job
        quoted, unpayable = _money(session, registry, books, job.id, job.project_id, spec,
                                   names)
        pending.append(Pending(job.id, spec, item.owner, item.owner_id,
                               JobView(spec, no_account(registry, item.owner),
                                       failed_at.get(job.id, frozenset()), quoted, unpayable,
                                       other_projects(registry,
                                                      project_names.get(job.project_id))),
                               job.created_at))
    screened: dict[str, list[Screened]] = {}
    homes = attempts.home_sites(session, {job.owner_id for job in pending})

    def exclusions(job: Pending) -> list[Candidate]:
        screened[job.job_id] = screen_all(job.view, views)
        return _at_home([s.candidate for s in screened[job.job_id]], homes.get(job.owner_id))

    forecaster = make_forecaster(session, registry, pending, now)
    routed = route_pass(pending, exclusions, forecaster, lambda job: _policy(job.spec, now))
    decided = []
    for routing in routed:
        job = by_id[routing.job.job_id]
        if books is not None and routing.decision.chosen:
            routing = Routing(routing.job, _drawn(session, books.payers[job.project_id],
                                                  routing, forecaster, actor, now))
        if routing.decision.chosen:
            decided.append(_place(session, job, routing, actor, now))
        elif all(s.lasting for s in screened[job.id]):
            # The sites changed since the job was accepted: no site can ever run it now.
            advance(session, job, JobState.FAILED, actor=actor, at=now,
                    reason=routing.decision.why)
            failed += 1
        elif job.site_name is None:
            job.reason = "waiting for a site: " + routing.decision.why
        # else: placed at a site that closed, and no other takes it: it waits there.
    session.flush()
    placements.add_all(session, decided, actor)
    return PassResult(len(decided), failed)


def _drawn(session: Session, payer: Payer, routing: Routing[Pending],
           forecaster: Forecaster[Pending], actor: str, now: datetime) -> Decision:
    """The decision once the job's lien is drawn again for it: a chosen site its project
    can no longer pay at (another job of this pass may have spent the funds) is excluded
    for this pass and the job ranked again without it (against the forecasts of the pass,
    the sites it left unforecast forecast now: the load it was committed with stays
    counted, and so does its guest-ledger entry, a rare error the next pass corrects from
    the placements); no choice left, and the job waits, saying why."""
    job, decision = routing.job, routing.decision
    policy, hedge, deadline = _policy(job.spec, now)
    quoted = job.view.quotes  # the bank on: every open site was priced (else excluded)
    while decision.chosen:
        # A hedged job may start at any of its sites, so its lien covers the most
        # expensive of them, drawn from the allocations that can pay at the first choice
        # (the job's own site); the revoked siblings are never charged.
        dearest = max(decision.chosen, key=lambda site: quoted[site])
        refused = budget.draw(session, payer,
                              budget.Drawn(job.job_id, job.spec.name, job.owner_id),
                              decision.chosen[0], quoted[dearest], now, actor)
        if refused is None:
            return decision
        decision = rank([replace(c, excluded=refused, forecast=None) if c.site == dearest
                         else c for c in forecast_every_site(decision.candidates, job,
                                                             forecaster)],
                        policy, hedge, deadline)
    return decision


def _place(session: Session, job: Job, routing: Routing[Pending], actor: str,
           now: datetime) -> NewPlacement:
    """Set the job's site from the decision, with its event; the row to record it."""
    decision = routing.decision
    spec = routing.job.spec
    why = decision.why
    if job.site_name is not None:
        why = f"site '{job.site_name}' stopped accepting jobs; {why[0].lower()}{why[1:]}"
    # The best site is the job's own; a hedged job is also submitted to the next best
    # (job targets: the first attempt to start wins, gateway.services.lifecycle.hedging).
    job.site_name = decision.chosen[0]
    if len(decision.chosen) > 1:
        targets.add(session, job.id, list(decision.chosen[1:]),
                    f"hedge {spec.routing.hedge}: {why}", now)
    job.reason, job.updated_at = why, now
    note(session, job, why, actor=actor, at=now)
    document = estimate_out(decision, now, spec.routing.hedge, spec.routing.deadline)
    guest_of, work = _guest(decision, spec)
    return replace(new_placement(job.id, {**document, "why": why}), guest_of=guest_of,
                   guest_work=work)


def _guest(decision: Decision, spec: JobSpec) -> tuple[str | None, int | None]:
    """The decision's guest-ledger entry, as the pass's forecaster counted it: the home
    the job left and its work at its first choice ((None, None): it stayed home or has
    none)."""
    home = next((c.site for c in decision.candidates if c.home), None)
    first = decision.candidates[0]
    if home is None or first.site == home or first.forecast is None:
        return None, None
    return home, guest_work(requested(spec.resources).cores, first.forecast.runtime)
