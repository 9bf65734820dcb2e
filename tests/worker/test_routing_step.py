"""The worker's routing step (issue 12): a `site: auto` job is accepted with no site and a
routing pass places it, recording the decision (GET /jobs/{id}/placement and an event);
a job placed at a site an administrator drains before it is claimed is routed again; a
job whose user named the site keeps it; a job no site can take now waits, and one no
site can ever take fails, saying why."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from gateway.api.app import create_app
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, JobOutput, Placement, Site
from gateway.domain.staging import ON_SITE
from gateway.domain.states import AttemptState
from gateway.repositories.jobs import targets
from gateway.runtime import Runtime
from gateway.scheduling.constraints import LabelRules
from gateway.services.sites.registry import SiteRegistry
from gateway.worker.context import StepContext
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from tests.conftest import LOOPBACK, MakeUser
from tests.worker.test_worker_local import post, run_until

SPEC = {"name": "r", "executable": "/bin/true"}


def set_site(runtime: Runtime, name: str, **values: Any) -> None:
    with transaction(runtime.sessions) as session:
        session.execute(update(Site).where(Site.name == name).values(**values))


def show(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def twin_runtime(runtime: Runtime, **twin: Any) -> Runtime:
    """The runtime with a second site: the local one again under another name."""
    local = runtime.sites.get("local")
    registry = SiteRegistry([local, dataclasses.replace(local, name="twin", **twin)])
    registry.sync(runtime.sessions)
    return dataclasses.replace(runtime, sites=registry)


def placement_rows(runtime: Runtime, job_id: str) -> int:
    with runtime.sessions() as session:
        return session.scalar(select(func.count()).select_from(Placement)
                              .where(Placement.job_id == job_id)) or 0


def test_an_auto_job_is_placed_by_the_routing_pass_and_explained(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user, other = make_user(), make_user()
    job_id = post(client, user.headers, SPEC)
    accepted = show(client, user.headers, job_id)
    assert (accepted["site"], accepted["state"]) == (None, "ACCEPTED")
    waiting = client.get(f"/api/v1/jobs/{job_id}/placement", headers=user.headers)
    assert waiting.status_code == 404 and waiting.json()["title"] == "Not placed yet"

    twins = twin_runtime(runtime)
    # The gateway saw 60 jobs wait 90 minutes each at the twin (enough for a 95% bound on
    # the 0.95 quantile); local has no history and nothing queued.
    earlier = post(client, user.headers, {**SPEC, "site": "local"})
    observed_waits(runtime, earlier, "twin", [5400.0] * 60, 1)
    assert route_jobs(StepContext.of(twins, "w")) is True
    assert route_jobs(StepContext.of(twins, "w")) is False  # routed once
    job = show(client, user.headers, job_id)
    assert (job["site"], job["state"]) == ("local", "ACCEPTED")

    placed = client.get(f"/api/v1/jobs/{job_id}/placement", headers=user.headers)
    assert placed.status_code == 200, placed.text
    decision = placed.json()
    assert decision["job_id"] == job_id and decision["policy"] == "fastest"
    assert decision["chosen"] == ["local"] and decision["hedge"] == 1
    # Those 60 runs of the same program took 1 s each: the run time comes from them.
    assert decision["why"] == ("Site 'local' has the earliest predicted completion (1 s, "
                               "95% bound 1 s); next best 'twin' at 1.5 h.")
    assert [c["site"] for c in decision["candidates"]] == ["local", "twin"]
    local, twin = (c["forecast"] for c in decision["candidates"])
    assert (local["wait_median"], local["wait_bound"]) == (0.0, 0.0)
    assert local["basis"].startswith("live queue (no wait history)")
    assert (twin["wait_median"], twin["wait_bound"]) == (5400.0, 5400.0)
    assert twin["basis"] == ("history site/queue/size/limit (60 waits); run time: last 2 "
                             "runs at 1 processors")
    assert (local["runtime"], twin["runtime"]) == (1.0, 1.0)
    assert twin["completion"] == twin["staging"] + 5400.0 + 1.0
    events = client.get(f"/api/v1/jobs/{job_id}/events", headers=user.headers).json()["items"]
    assert [(e["from_state"], e["to_state"], e["reason"]) for e in events][-1] == (
        "ACCEPTED", "ACCEPTED", decision["why"])
    # Another user's job is not theirs to explain.
    assert client.get(f"/api/v1/jobs/{job_id}/placement",
                      headers=other.headers).status_code == 404


def observed_waits(runtime: Runtime, job_id: str, site: str, waits: list[float],
                   first: int) -> None:
    """Attempts of an earlier job at `site` that started after these waits."""
    start = utcnow() - timedelta(days=1)
    with transaction(runtime.sessions) as session:
        for i, wait in enumerate(waits):
            session.add(Attempt(job_id=job_id, number=first + i, site_name=site,
                                tag=f"old-{site}-{i}", state=AttemptState.COMPLETED,
                                workdir="/nowhere", submitted_at=start,
                                started_at=start + timedelta(seconds=wait),
                                ended_at=start + timedelta(seconds=wait + 1)))


def test_auto_jobs_leave_a_drained_site(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    auto = post(client, user.headers, SPEC)
    pinned = post(client, user.headers, {**SPEC, "site": "local"})
    twins = twin_runtime(runtime)
    assert route_jobs(StepContext.of(twins, "w")) is True  # equal forecasts: by name
    assert show(client, user.headers, auto)["site"] == "local"

    set_site(runtime, "local", drained=True)
    # The API's worker knows no other site: the job keeps waiting where it is.
    assert route_jobs(StepContext.of(runtime, "w")) is False
    assert show(client, user.headers, auto)["site"] == "local"

    assert route_jobs(StepContext.of(twins, "w")) is True
    moved = show(client, user.headers, auto)
    assert (moved["site"], moved["state"]) == ("twin", "ACCEPTED")
    assert moved["reason"].startswith(
        "site 'local' stopped accepting jobs; site 'twin' has the earliest predicted "
        "completion"), moved["reason"]
    assert placement_rows(runtime, auto) == 2
    explained = client.get(f"/api/v1/jobs/{auto}/placement", headers=user.headers).json()
    assert explained["chosen"] == ["twin"] and explained["why"] == moved["reason"]
    assert [c["excluded"] for c in explained["candidates"]] == [
        None, "site 'local' is drained (not accepting jobs)"]
    assert show(client, user.headers, pinned)["site"] == "local"
    assert route_jobs(StepContext.of(twins, "w")) is False  # nothing left to move

    job = run_until(Worker(twins), client, user.headers, auto, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED" and job["attempts"][0]["site"] == "twin"
    waiting = show(client, user.headers, pinned)
    assert (waiting["site"], waiting["state"]) == ("local", "ACCEPTED")
    named = client.get(f"/api/v1/jobs/{pinned}/placement", headers=user.headers).json()
    assert (named["policy"], named["chosen"], named["why"]) == (
        "pinned", ["local"], "The job names site 'local'.")


def test_a_job_without_an_open_site_waits_and_one_no_site_can_run_fails(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {**SPEC, "labels": {"residency": "eu"}})
    set_site(runtime, "local", drained=True)
    assert route_jobs(StepContext.of(runtime, "w")) is False
    waiting = show(client, user.headers, job_id)
    assert (waiting["site"], waiting["state"]) == (None, "ACCEPTED")
    assert waiting["reason"] == ("waiting for a site: No site can run this job (local: "
                                       "site 'local' is drained (not accepting jobs)).")
    # The site's configuration changes: it now refuses the job's labels, for good.
    local = runtime.sites.get("local")
    refusing = dataclasses.replace(local, labels=LabelRules(refuses={"residency": frozenset()}))
    changed = dataclasses.replace(runtime, sites=SiteRegistry([refusing]))
    set_site(runtime, "local", drained=False)
    assert route_jobs(StepContext.of(changed, "w")) is False
    failed = show(client, user.headers, job_id)
    assert failed["state"] == "FAILED" and failed["site"] is None
    assert failed["reason"] == ("No site can run this job (local: site 'local' refuses "
                                      "jobs labelled residency=eu).")


def test_jobs_of_one_pass_see_each_other_and_a_hedge_gets_its_sibling(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    twins = twin_runtime(runtime)
    cores = runtime.sites.get("local").shape.cores_per_node
    # Each fills a site for its hour (one rank of `cores` threads: no MPI launcher needed).
    whole = {**SPEC, "resources": {"ranks": 1, "threads_per_rank": cores}}
    first, second = post(client, user.headers, whole), post(client, user.headers, whole)
    hedged = post(client, user.headers, {**SPEC, "routing": {"hedge": 2}})
    assert route_jobs(StepContext.of(twins, "w")) is True  # one pass, oldest first
    # The first took 'local' (equal forecasts: by name); the second saw it there.
    assert [show(client, user.headers, j)["site"] for j in (first, second)] == [
        "local", "twin"]
    second_why = client.get(f"/api/v1/jobs/{second}/placement",
                            headers=user.headers).json()["why"]
    assert second_why == ("Site 'twin' has the earliest predicted completion (60 min, 95% "
                          "bound 60 min); next best 'local' at 2.0 h.")
    decision = client.get(f"/api/v1/jobs/{hedged}/placement", headers=user.headers).json()
    assert decision["chosen"] == ["local", "twin"] and decision["hedge"] == 2
    assert decision["why"].endswith("; hedged over 'local', 'twin'.")
    assert show(client, user.headers, hedged)["site"] == "local"
    with runtime.sessions() as session:
        assert targets.sites_of(session, hedged) == ["twin"]


def test_a_step_with_a_large_kept_input_is_routed_where_the_input_is(
        runtime: Runtime, make_user: MakeUser) -> None:
    """A workflow's data edge from an output kept at its site is `site://SITE/PATH`: its
    recorded size makes staging it anywhere else cost time, so routing chooses SITE."""
    headers = make_user().headers
    twins = twin_runtime(runtime)
    kept = "/scratch/gw/jobs/producer/mesh.h5"
    with TestClient(create_app(runtime=twins), client=LOOPBACK) as client:
        producer = post(client, headers, {**SPEC, "site": "local"})
        with transaction(runtime.sessions) as session:
            session.add(JobOutput(job_id=producer, path="mesh.h5", size=50 * 10**9,
                                  sha256="a" * 64, location=ON_SITE, site_name="twin",
                                  site_path=kept))
        consumer = post(client, headers, {
            **SPEC, "inputs": [{"source": f"site://twin{kept}", "dest": "mesh.h5"}]})
        assert route_jobs(StepContext.of(twins, "w")) is True
        decision = client.get(f"/api/v1/jobs/{consumer}/placement", headers=headers).json()
    assert decision["chosen"] == ["twin"], decision["why"]
    staging = {c["site"]: c["forecast"]["staging"] for c in decision["candidates"]}
    # 50 GB at most at the 10 MB/s fallback: well over an hour anywhere but at twin.
    assert staging["twin"] == 0.0 and staging["local"] > 3600, staging


def test_a_pass_leaves_a_site_that_cannot_lead_unforecast_and_says_how_soon_it_could(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # Three sites: the local one, its twin, and a copy a thousand times slower. The
    # program's 60 earlier runs at local took 1 s each: 1 s here and at the twin, 1,000 s
    # at 'far', later than the two that lead, so the pass does not forecast it.
    user = make_user()
    local = runtime.sites.get("local")
    registry = SiteRegistry([local, dataclasses.replace(local, name="twin"),
                             dataclasses.replace(local, name="far", speed=0.001)])
    registry.sync(runtime.sessions)
    three = dataclasses.replace(runtime, sites=registry)
    earlier = post(client, user.headers, {**SPEC, "site": "local"})
    observed_waits(runtime, earlier, "local", [0.0] * 60, 1)
    job_id = post(client, user.headers, SPEC)
    assert route_jobs(StepContext.of(three, "w")) is True
    decision = client.get(f"/api/v1/jobs/{job_id}/placement", headers=user.headers).json()
    assert decision["chosen"] == ["local"]
    assert [(c["site"], c["forecast"] is not None) for c in decision["candidates"]] == [
        ("local", True), ("twin", True), ("far", False)]
    far = decision["candidates"][2]
    assert far["not_before"] == pytest.approx(1000.0) and far["excluded"] is None
    assert decision["why"].endswith("next best 'twin' at 1 s.")
