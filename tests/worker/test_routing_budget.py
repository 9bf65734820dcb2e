"""Routing meets the bank (issue 13, scope 4), SQLite and PostgreSQL: with allocations
enforced, a routing pass only places a job where its project can pay (a site it cannot
pay at is excluded, saying so, in GET /jobs/{id}/placement), shows each site's quote,
draws the job's lien again for the chosen site (the ledger shows the release and the new
lien), and tries the next choice when another job of the same pass spent the funds
first; `cheapest` takes the site with the lowest quote.

The federation is the local site twice under two names with different charge factors
(site config `charge_factor`: 'local' 4 SU per core-hour, 'twin' 1), so their forecasts
tie (fastest breaks the tie by the order configured, then by the home and the lighter
backlog: never by name) and only the price differs."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from adapters.base import NativeState
from gateway.accounting.rates import Rate
from gateway.api.app import create_app
from gateway.db.bank_models import Lien
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job, Placement
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.money import audit
from gateway.runtime import Runtime
from gateway.scheduling.guest_ledger import GuestLedger, guest_work
from gateway.services.money import allocations
from gateway.services.money.allocations import Grant
from gateway.services.routing.forecasting import PassForecaster, build_forecaster, guest_ledger
from gateway.services.routing.placement import Pending, route_pending
from gateway.services.sites.registry import SiteRegistry
from gateway.settings import Settings
from gateway.worker.context import StepContext
from gateway.worker.failover import fail_over_stranded
from gateway.worker.route import route_jobs
from tests.conftest import LOOPBACK, MakeUser, TestUser
from tests.services.bank_fixtures import check_invariants
from tests.worker.test_failover import mark_down
from tests.worker.test_hedging import Driver
from tests.worker.test_worker_local import post

# One core for an hour: 4.000 SU at 'local', 1.000 SU at 'twin'.
SPEC: dict[str, Any] = {"name": "b", "executable": "/bin/true",
                        "resources": {"walltime": 3600}}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"allocations_enforced": True})


@pytest.fixture
def bank(runtime: Runtime) -> Runtime:
    """The runtime with the bank on and two priced sites."""
    local = runtime.sites.get("local")
    registry = SiteRegistry([dataclasses.replace(local, rate=Rate(core_hour_milli=4000)),
                             dataclasses.replace(local, name="twin",
                                                 rate=Rate(core_hour_milli=1000))])
    registry.sync(runtime.sessions)
    return dataclasses.replace(runtime, sites=registry)


@pytest.fixture
def api(bank: Runtime) -> Iterator[TestClient]:
    with TestClient(create_app(runtime=bank), client=LOOPBACK) as c:
        yield c


def project(runtime: Runtime, user: TestUser) -> str:
    """The name of the user's personal project (their jobs' payer)."""
    with runtime.sessions() as session:
        ref = jobs.personal_project(session.connection(), user.principal.user_id)
        assert ref is not None
        return ref.name


def grant(runtime: Runtime, user: TestUser, pool: str, su: int) -> int:
    """An allocation of `su` SU at `pool` for the user's personal project."""
    now = utcnow()
    with transaction(runtime.sessions) as session:
        a = allocations.grant(session, Grant(project(runtime, user), pool, su * 1000,
                                             now - timedelta(days=1), now + timedelta(days=30)),
                              {"local", "twin"}, "committee", "award", now)
        return a.id


def placement(client: TestClient, user: TestUser, job_id: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/jobs/{job_id}/placement", headers=user.headers)
    assert r.status_code == 200, r.text
    document: dict[str, Any] = r.json()
    return document


def job(client: TestClient, user: TestUser, job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    return found


def lien_links(runtime: Runtime, job_id: str) -> list[tuple[str, int]]:
    """The job's liens taken and released, in chain order: (kind, milli-SU); a lien
    carried by the job's first state change's link (PostgreSQL) counted as its own."""
    with runtime.engine.connect() as conn:
        return [(kind, data["amount_milli"]) for link in audit.of_subject(conn, f"job:{job_id}")
                for kind, data in link.told() if kind in ("lien", "release")]


def liens(runtime: Runtime, job_id: str) -> list[tuple[str | None, int, str]]:
    with runtime.sessions() as session:
        return [(lien.site_name, lien.amount_milli, lien.status) for lien in session.scalars(
            select(Lien).where(Lien.job_id == job_id).order_by(Lien.id))]


def test_a_site_the_project_cannot_pay_at_is_excluded_saying_why(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "twin", 1)  # only 'twin' is paid for: exactly one job's quote there
    job_id = post(api, user.headers, SPEC)
    assert liens(bank, job_id) == [("twin", 1000, "held")]  # submit: the cheapest it can pay

    assert route_jobs(StepContext.of(bank, "w")) is True
    decision = placement(api, user, job_id)
    assert decision["chosen"] == ["twin"]
    name = project(bank, user)
    twin, local = decision["candidates"]
    # Its own lien counts for itself: the allocation has 0 SU left, and 1 held for it.
    assert (twin["site"], twin["excluded"], twin["quote_su"]) == ("twin", None, "1.000")
    assert local == {"site": "local", "forecast": None, "p_deadline": None,
                     "quote_su": "4.000",
                     "excluded": f"project '{name}' has 0.000 SU available at 'local'; "
                                 "this job would cost 4.000 SU"}
    assert job(api, user, job_id)["site"] == "twin"
    # Routing chose the site and quote the submit's lien was drawn for: it stays as it is.
    assert lien_links(bank, job_id) == [("lien", 1000)]
    assert liens(bank, job_id) == [("twin", 1000, "held")]


def test_the_lien_moves_to_the_chosen_sites_quote(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 10)
    job_id = post(api, user.headers, SPEC)
    assert route_jobs(StepContext.of(bank, "w")) is True
    decision = placement(api, user, job_id)
    assert decision["policy"] == "fastest" and decision["chosen"] == ["local"]
    assert [(c["site"], c["excluded"], c["quote_su"]) for c in decision["candidates"]] == [
        ("local", None, "4.000"), ("twin", None, "1.000")]
    # Held at submit for the cheapest site; routed to the faster one, at its price.
    assert lien_links(bank, job_id) == [("lien", 1000), ("release", 1000), ("lien", 4000)]
    assert liens(bank, job_id) == [("twin", 1000, "released"), ("local", 4000, "held")]


def test_cheapest_takes_the_lowest_quote(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 10)
    cheap = post(api, user.headers, {**SPEC, "routing": {"policy": "cheapest"}})
    fast = post(api, user.headers, SPEC)
    assert route_jobs(StepContext.of(bank, "w")) is True
    decision = placement(api, user, cheap)
    assert decision["policy"] == "cheapest" and decision["chosen"] == ["twin"]
    assert decision["why"].startswith("Site 'twin' has the lowest quote (1.000 SU; "
                                      "predicted completion ")
    assert decision["why"].endswith("; next cheapest 'local' at 4.000 SU.")
    assert placement(api, user, fast)["chosen"] == ["local"]
    assert liens(bank, cheap)[-1] == ("twin", 1000, "held")


def test_cheapest_meets_the_deadline_first(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 10)
    # A deadline the job can meet anywhere (it runs 1 s): the cheaper site still wins,
    # and the estimate says how likely each site makes it.
    deadline = (utcnow() + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec = {**SPEC, "routing": {"policy": "cheapest", "deadline": deadline}}
    r = api.post("/api/v1/jobs:estimate", headers=user.headers, json=spec)
    assert r.status_code == 200, r.text
    estimate = r.json()
    assert estimate["chosen"] == ["twin"]
    assert "lowest quote of the sites predicted to finish by the deadline" in estimate["why"]
    assert [(c["site"], c["quote_su"], c["p_deadline"]) for c in estimate["candidates"]] == [
        ("twin", "1.000", 0.95), ("local", "4.000", 0.95)]


def _ran_at(runtime: Runtime, api: TestClient, user: TestUser, site: str) -> None:
    """A short job of the user's, run to the end at `site`: the user's home from now on."""
    job = post(api, user.headers, {**SPEC, "site": site, "resources": {"walltime": 60}})
    driver = Driver(runtime)
    claim = driver.claim(site)
    assert claim.job_id == job
    driver.submit(site, claim, "1")
    driver.status(claim, NativeState.COMPLETED, exit_code=0)


def test_a_site_spent_by_an_earlier_job_of_the_pass_gives_way_to_the_next_choice(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 6)
    _ran_at(bank, api, user, "local")  # home: both jobs rank 'local' first
    first = post(api, user.headers, SPEC)  # each holds 1 SU (at 'twin') from submit
    second = post(api, user.headers, SPEC)
    # When the pass opens its books, each job could pay for 'local' (4 available after the
    # home run's 0.067, + its own 1); the first one's lien there leaves 1.933 for the
    # second, which goes to 'twin'.
    assert route_jobs(StepContext.of(bank, "w")) is True
    assert placement(api, user, first)["chosen"] == ["local"]
    decision = placement(api, user, second)
    assert decision["chosen"] == ["twin"]
    assert decision["candidates"][1] == {
        "site": "local", "forecast": None, "p_deadline": None, "quote_su": "4.000",
        "home": True,
        "excluded": f"project '{project(bank, user)}' has 1.933 SU available at "
                    "'local'; this job would cost 4.000 SU"}
    assert liens(bank, first)[-1] == ("local", 4000, "held")
    assert liens(bank, second) == [("twin", 1000, "held")]


def test_a_job_its_project_cannot_pay_for_anywhere_waits_saying_why(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    allocation = grant(bank, user, "*", 10)
    job_id = post(api, user.headers, SPEC)
    with transaction(bank.sessions) as session:
        allocations.set_status(session, allocation, "suspended", "committee", "test",
                               utcnow())
    assert route_jobs(StepContext.of(bank, "w")) is False
    waiting = job(api, user, job_id)
    name = project(bank, user)
    assert (waiting["site"], waiting["state"]) == (None, "ACCEPTED")
    assert waiting["reason"] == (
        f"waiting for a site: No site can run this job (local: project '{name}' has 0.000 "
        f"SU available at 'local'; this job would cost 4.000 SU; twin: project '{name}' has "
        "0.000 SU available at 'twin'; this job would cost 1.000 SU).")
    assert liens(bank, job_id) == [("twin", 1000, "held")]  # nothing drawn, nothing lost
    # Balances change: once the allocation is active again, the next pass places it.
    with transaction(bank.sessions) as session:
        allocations.set_status(session, allocation, "active", "committee", "test", utcnow())
    assert route_jobs(StepContext.of(bank, "w")) is True
    assert job(api, user, job_id)["site"] == "local"


def test_with_the_bank_off_only_cheapest_is_priced(
        bank: Runtime, make_user: MakeUser) -> None:
    rt = dataclasses.replace(bank, settings=bank.settings.model_copy(
        update={"allocations_enforced": False}))
    user = make_user()  # no allocation at all: nothing is checked, nothing held
    with TestClient(create_app(runtime=rt), client=LOOPBACK) as client:
        plain = post(client, user.headers, SPEC)
        cheap = post(client, user.headers, {**SPEC, "routing": {"policy": "cheapest"}})
        assert route_jobs(StepContext.of(rt, "w")) is True
        decision = placement(client, user, plain)
        assert decision["chosen"] == ["local"]
        # The decision reads as it did before the bank.
        assert all("quote_su" not in c for c in decision["candidates"])
        decision = placement(client, user, cheap)
        assert decision["chosen"] == ["twin"]
        assert [c["quote_su"] for c in decision["candidates"]] == ["1.000", "4.000"]
    assert liens(rt, plain) == [] and liens(rt, cheap) == []


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_two_workers_draw_each_jobs_lien_once(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    """Two workers route the same project's jobs at once (the race of
    tests/worker/test_routing_race.py, the bank on): each job is placed once and its lien
    drawn once, and the allocations' locks taken in one order never deadlock."""
    user = make_user()
    grant(bank, user, "*", 200)
    ids = {post(api, user.headers, {**SPEC, "name": f"j{i}"}) for i in range(40)}
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        ctx = StepContext.of(bank, name)
        try:
            start.wait()
            while True:
                with ctx.unit() as session:
                    result = route_pending(session, bank.sites, build_forecaster,
                                           ctx.holder.actor, 3, bank.clock(), charged=True)
                if not result.placed:
                    return
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    with bank.sessions() as session:
        placed = Counter(session.scalars(select(Placement.job_id)))
        sites = {job_id: site for job_id, site in session.execute(select(Job.id, Job.site_name))}
    assert set(placed) == ids and set(placed.values()) == {1}
    for job_id in ids:
        # Submit held 1 SU at 'twin'; routing kept it there, or released it and drew the
        # chosen site's quote.
        assert lien_links(bank, job_id) == ([("lien", 1000)] if sites[job_id] == "twin"
                                            else [("lien", 1000), ("release", 1000),
                                                  ("lien", 4000)])
    with bank.sessions() as session:
        check_invariants(session)


def strand_at_local(api: TestClient, bank: Runtime, user: TestUser) -> str:
    """A job routed to 'local' and queued there, then 'local' down for ten minutes."""
    job_id = post(api, user.headers, SPEC)
    assert route_jobs(StepContext.of(bank, "w")) is True
    d = Driver(bank)
    claim = d.claim("local")
    d.submit("local", claim, "101")
    mark_down(bank, "local", minutes=10)
    return job_id


def test_failover_draws_the_lien_where_the_job_may_now_start(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 10)
    job_id = strand_at_local(api, bank, user)
    assert fail_over_stranded(StepContext.of(bank, "w")) is True
    # It may now start at either site (first to start wins): the lien covers the dearer
    # ('local', 4 SU), drawn for 'twin', where it was routed again.
    assert liens(bank, job_id)[-2:] == [("local", 4000, "released"), ("twin", 4000, "held")]


def test_no_failover_to_a_site_the_project_cannot_pay_at(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "local", 10)  # nothing pays at 'twin'
    job_id = strand_at_local(api, bank, user)
    assert fail_over_stranded(StepContext.of(bank, "w")) is False
    assert liens(bank, job_id)[-1] == ("local", 4000, "held")


def test_a_hedged_jobs_lien_covers_its_dearest_site(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    grant(bank, user, "*", 10)
    job_id = post(api, user.headers, {**SPEC, "routing": {"policy": "cheapest", "hedge": 2}})
    assert route_jobs(StepContext.of(bank, "w")) is True
    assert placement(api, user, job_id)["chosen"] == ["twin", "local"]
    # Either copy may be the one that runs: held for 'local' (4 SU), drawn at 'twin'.
    assert liens(bank, job_id)[-1] == ("twin", 4000, "held")


def test_the_guest_ledger_production_rebuilds_is_the_one_its_pass_kept(
        api: TestClient, bank: Runtime, make_user: MakeUser) -> None:
    """A job placed away from its home is recorded with the home it left and its work at
    its site; the guest ledger the next pass rebuilds from the placements equals the one
    the pass kept as it committed (as the simulator keeps it across its passes)."""
    user = make_user()
    grant(bank, user, "*", 1000)
    _ran_at(bank, api, user, "local")  # home: 'local'; the run took 10 min
    with transaction(bank.sessions) as session:
        ran = session.scalars(select(Attempt)).one()
        assert ran.started_at is not None
        ran.ended_at = ran.started_at + timedelta(minutes=10)
    # Each job takes every core of 'local': the second finds it busy and goes to 'twin',
    # idle (a guest that delays no one there).
    cores = bank.sites.get("local").shape.cores_per_node
    whole = {**SPEC, "resources": {"walltime": 3600, "threads_per_rank": cores}}
    first, second = post(api, user.headers, whole), post(api, user.headers, whole)
    kept: list[GuestLedger | None] = []

    def forecaster(session: Session, registry: SiteRegistry, pending: Sequence[Pending],
                   now: datetime) -> PassForecaster:
        made = build_forecaster(session, registry, pending, now)
        kept.append(made.inner.ledger)
        return made

    ctx = StepContext.of(bank, "w")
    with ctx.unit() as session:
        route_pending(session, bank.sites, forecaster, ctx.holder.actor, 10, bank.clock(),
                      charged=True)
    assert placement(api, user, first)["chosen"] == ["local"]
    moved = placement(api, user, second)
    assert moved["chosen"] == ["twin"]
    with bank.sessions() as session:
        rows = {job_id: (home, work) for job_id, home, work in session.execute(
            select(Placement.job_id, Placement.guest_of, Placement.guest_work))}
        rebuilt = guest_ledger(session)
    runtime = moved["candidates"][0]["forecast"]["runtime"]
    work = guest_work(cores, runtime)
    assert work > 0
    assert rows == {first: (None, None), second: ("local", work)}
    ledger = kept[0]
    assert ledger is not None
    assert [(ledger.credit(s), rebuilt.credit(s)) for s in ("local", "twin")] == [
        (work, work), (-work, -work)]
