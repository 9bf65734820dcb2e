"""Production feeds the wait predictor the bound each started job was given when it was
routed, so the predictor calibrates its bounds on their outcomes, records each wait in
the class the job had when routed (its user's and its projection's), and calibrates each
site's medians on the waits of the jobs routed there: as the offline evaluation and the
simulator do. SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState
from gateway.repositories.jobs import placements
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.attempts import StartedAttempt
from gateway.repositories.jobs.placements import NewPlacement
from gateway.runtime import Runtime
from gateway.scheduling.constraints import JobView
from gateway.scheduling.prediction.late_waits import (
    LateWaits,
    QueueLoad,
    late_features,
    named_features,
)
from gateway.scheduling.prediction.wait_predictor import JobClass
from gateway.scheduling.ranking import Candidate, Forecast
from gateway.services.routing import forecasting
from gateway.services.routing.decisions import candidate_out
from gateway.services.routing.forecasting import build_forecaster, recorded_class
from gateway.services.routing.placement import Pending
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post


def started_jobs(runtime: Runtime, client: TestClient, headers: dict[str, str],
                 bound: float | None, projected: float | None = None,
                 told: float | None = None) -> None:
    """40 jobs that waited 600 s at 'local', each routed (when `bound` is given) with that
    95% bound of its class and median for 'local' (and that walltime projection, when
    given; and the bound it was told, when not the class's)."""
    now = utcnow()
    for n in range(40):
        job_id = post(client, headers, {"name": f"w{n}", "executable": "/bin/true",
                                        "site": "local"})
        with transaction(runtime.sessions) as session:
            started = now - timedelta(minutes=40 - n)
            session.add(Attempt(job_id=job_id, number=1, site_name="local", tag=f"t{n}",
                                state=AttemptState.COMPLETED, workdir="/nowhere",
                                submitted_at=started - timedelta(seconds=600),
                                started_at=started, ended_at=started + timedelta(seconds=5)))
            if bound is not None:
                shown = bound if told is None else told
                forecast = {"wait_median": bound, "wait_bound": shown, "runtime": 5.0,
                            "staging": 0.0, "completion": bound + 5, "completion_bound":
                            shown + 5, "wait_quantiles": [], "basis": "test",
                            "class_bound": bound}
                if projected is not None:
                    forecast["projected_wait"] = projected
                placements.add_all(session, [NewPlacement(
                    job_id, started - timedelta(seconds=600), "fastest", 1, None, ["local"],
                    "test", [{"site": "local", "excluded": None, "forecast": forecast,
                              "p_deadline": None}])], "router")


def scale(runtime: Runtime) -> float:
    with runtime.sessions() as session:
        forecaster = build_forecaster(session, runtime.sites, [], utcnow())
    return forecaster.inner.waits.scale("local")


def test_missed_bounds_widen_the_next(client: TestClient, runtime: Runtime,
                                      make_user: MakeUser) -> None:
    headers = make_user().headers
    started_jobs(runtime, client, headers, bound=None)
    assert scale(runtime) == 1.0  # nothing given, nothing to calibrate on
    started_jobs(runtime, client, headers, bound=60.0)  # each waited 600 s: all missed
    assert scale(runtime) > 1.0


def test_the_class_bound_is_calibrated_not_the_bound_told(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # Each job was told 3,600 s (a hold raised it; it held), but its class's bound was
    # 60 s, which it missed: what calibrates is the class's, as the evaluation and the
    # simulator give it back (`Forecast.class_bound`), so the factor rises.
    started_jobs(runtime, client, make_user().headers, bound=60.0, told=3600.0)
    assert scale(runtime) > 1.0


def test_routed_outcomes_and_projection_classes_are_production_s_too(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    headers = make_user().headers
    # Routed with a 60 s median and a 3,000 s projection; each waited 600 s.
    started_jobs(runtime, client, headers, bound=60.0, projected=3000.0)
    with runtime.sessions() as session:
        forecaster = build_forecaster(session, runtime.sites, [], utcnow()).inner
    assert forecaster.outcomes is not None
    # (1 + 600) / (1 + 60): the site's next medians are scaled by that much.
    assert abs(forecaster.outcomes.factor("local") - 601 / 61) < 1e-9
    # The waits joined the projection's class (wait class of 3,000 s: 50 min -> 6).
    history = forecaster.waits.predict(JobClass("local", "", 1, 3600.0, 3000.0))
    assert history is not None and history.level == "site/projection/limit"


def test_production_records_a_wait_in_the_class_its_forecaster_gave(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # One predictor: the simulator and the evaluation record a wait in the class
    # `SiteForecaster.job_class` gives; production rebuilds it from the stored spec and
    # the stored decision. Should either change alone, this fails.
    user = make_user()
    job_id = post(client, user.headers, {"name": "c", "executable": "/bin/true",
                                         "resources": {"threads_per_rank": 2, "walltime": 1200}})
    now = utcnow()
    with transaction(runtime.sessions) as session:
        job = session.get(Job, job_id)
        assert job is not None
        spec = jobs.stored_spec(job.spec)
        pending = Pending(job_id, spec, None, job.owner_id, JobView(spec), now)
        forecaster = build_forecaster(session, runtime.sites, [pending], now)
        forecast = forecaster.forecast(pending, "local")
        placements.add_all(session, [NewPlacement(
            job_id, now, "fastest", 1, None, ["local"], "test",
            [dict(candidate_out(Candidate("local", forecast=forecast), None))])], "router")
        given = placements.given_forecasts(session, {job_id})[(job_id, "local")]
        start = StartedAttempt("local", AttemptState.RUNNING, now, now, None, job.owner_id,
                               job.spec, job_id)
        expected = forecaster.inner.job_class(forecaster.needs[job_id], "local")
    assert expected.projected_wait is not None and expected.user == job.owner_id
    assert recorded_class(start, given) == expected
    assert given.uncalibrated_median == forecast.uncalibrated_median
    assert given.class_bound == forecast.class_bound


def late_starts(runtime: Runtime, client: TestClient, headers: dict[str, str], count: int,
                features: tuple[float, ...]) -> None:
    """`count` jobs that waited 2 h at 'local', each routed with the late-wait model's
    `features` recorded as production records them (`candidate_out`)."""
    now = utcnow()
    forecast = Forecast(60.0, 900.0, 5.0, 0.0, wait_if_late=1800.0, late_features=features)
    stored = dict(candidate_out(Candidate("local", forecast=forecast), None))
    for n in range(count):
        job_id = post(client, headers, {"name": f"l{n}", "executable": "/bin/true",
                                        "site": "local"})
        with transaction(runtime.sessions) as session:
            started = now - timedelta(minutes=count - n)
            submitted = started - timedelta(hours=2)
            session.add(Attempt(job_id=job_id, number=1, site_name="local", tag=f"l{n}",
                                state=AttemptState.COMPLETED, workdir="/nowhere",
                                submitted_at=submitted, started_at=started,
                                ended_at=started + timedelta(seconds=5)))
            placements.add_all(session, [NewPlacement(
                job_id, submitted, "fastest", 1, None, ["local"], "test", [stored])], "router")


def test_production_learns_late_waits_from_the_features_its_decisions_recorded(
        client: TestClient, runtime: Runtime, make_user: MakeUser,
        monkeypatch: pytest.MonkeyPatch) -> None:
    late = LateWaits(minimum=60)
    monkeypatch.setattr(forecasting, "LATE_WAITS", late)
    features = late_features(4, 3600.0, QueueLoad(3, 2, 1e4, 8, 5e3), 1200.0, 60.0, 900.0,
                             1800.0, (19, 4))
    headers = make_user().headers
    late_starts(runtime, client, headers, 40, features)
    with runtime.sessions() as session:
        given = placements.given_forecasts(session, set(jobs_of(session)))
    # Stored by name, read back in the model's order.
    assert {named_features(f.late_features) for f in given.values()} == {features}
    for _ in range(2):  # each pass reads the same starts again: each is kept once
        with runtime.sessions() as session:
            forecaster = build_forecaster(session, runtime.sites, [], utcnow()).inner
        assert forecaster.late is late
        assert late.predict("local", features, None) is None  # 40 < 60, not 80
    late_starts(runtime, client, headers, 20, features)
    with runtime.sessions() as session:
        build_forecaster(session, runtime.sites, [], utcnow())
    assert late.predict("local", features, None) == pytest.approx(7200.0, rel=0.01)


def jobs_of(session: Session) -> list[str]:
    return list(session.scalars(select(Job.id)))
