"""Routing decisions as documents: what is stored in `placements` and what the API sends
(`gateway.schemas.placements`). One conversion, so `explain` shows the stored decision
field for field as an estimate would have shown it."""

from __future__ import annotations

from datetime import datetime

from gateway.accounting.units import su
from gateway.repositories.jobs.placements import NewPlacement, PlacementRecord
from gateway.scheduling.policies import registry as policies
from gateway.scheduling.policies.base import DeadlineRule
from gateway.scheduling.prediction.late_waits import LATE_FEATURES
from gateway.scheduling.ranking import Candidate, Decision, Forecast, sentence
from gateway.schemas import parse
from gateway.schemas.placements import CandidateOut, EstimateOut, ForecastOut, PlacementOut


def forecast_out(forecast: Forecast) -> ForecastOut:
    """One site's forecast as sent (seconds from the decision)."""
    out = ForecastOut(
        wait_median=forecast.wait_median, wait_bound=forecast.wait_bound,
        runtime=forecast.runtime if forecast.runtime_known else None,
        staging=forecast.staging,
        completion=forecast.completion, completion_bound=forecast.completion_bound,
        wait_quantiles=[(p, w) for p, w in forecast.wait_quantiles], basis=forecast.basis,
        backlog=forecast.backlog)
    if forecast.calibration != 1.0:
        out["calibration"] = forecast.calibration
    if forecast.projected_wait is not None:
        out["projected_wait"] = forecast.projected_wait
    if forecast.wait_likely is not None:
        out["wait_likely"] = forecast.wait_likely
    if forecast.wait_if_late is not None:
        out["wait_if_late"] = forecast.wait_if_late
    if forecast.late_features is not None:
        out["late_features"] = dict(zip(LATE_FEATURES, forecast.late_features, strict=True))
    if forecast.class_bound is not None:
        out["class_bound"] = forecast.class_bound
    if not forecast.welcome:
        out["welcome"] = False
    return out


def candidate_out(candidate: Candidate, deadline_in: float | None) -> CandidateOut:
    """One candidate as sent; `deadline_in` (seconds) only when the job has a deadline.
    Its quote only when it was priced (unpriced decisions read as they always did)."""
    forecast = candidate.forecast
    p_deadline = None
    if forecast is not None and deadline_in is not None:
        p_deadline = forecast.p_finish_within(deadline_in)
    out = CandidateOut(site=candidate.site, excluded=candidate.excluded,
                       forecast=None if forecast is None else forecast_out(forecast),
                       p_deadline=p_deadline)
    if candidate.quote_milli is not None:
        out["quote_su"] = su(candidate.quote_milli)
    if candidate.image is not None and candidate.excluded is None:
        out["image"] = candidate.image
    if candidate.caution is not None:
        out["caution"] = candidate.caution
    if candidate.home:
        out["home"] = True
    if candidate.not_before is not None:
        out["not_before"] = candidate.not_before
    return out


def deadline_in(deadline: datetime | None, now: datetime) -> float | None:
    """Seconds from `now` to the deadline (negative once passed), or None."""
    return None if deadline is None else (deadline - now).total_seconds()


def estimate_out(decision: Decision, now: datetime, hedge: int,
                 deadline: datetime | None) -> EstimateOut:
    """A decision made at `now`, as the estimate document (each candidate's chance to make
    the deadline under a policy that takes one)."""
    takes = policies.policy(decision.policy).deadline_rule is not DeadlineRule.NONE
    seconds = deadline_in(deadline, now) if takes else None
    return EstimateOut(decided_at=now, policy=decision.policy, hedge=hedge, deadline=deadline,
                       chosen=list(decision.chosen), why=decision.why,
                       candidates=[candidate_out(c, seconds) for c in decision.candidates])


def new_placement(job_id: str, document: EstimateOut) -> NewPlacement:
    """The row that records a decision."""
    return NewPlacement(job_id=job_id, decided_at=document["decided_at"],
                        policy=document["policy"], hedge=document["hedge"],
                        deadline=document["deadline"], chosen=document["chosen"],
                        why=document["why"], candidates=[dict(c) for c in
                                                          document["candidates"]])


def placement_out(record: PlacementRecord) -> PlacementOut:
    """A recorded decision as sent."""
    return PlacementOut(decided_at=record.decided_at, policy=record.policy,
                        hedge=record.hedge, deadline=record.deadline,
                        chosen=list(record.chosen), why=record.why,
                        candidates=[_stored_candidate(c) for c in record.candidates],
                        job_id=record.job_id)


def pinned_out(job_id: str, site: str, created_at: datetime) -> PlacementOut:
    """The decision of a job that named its site: made when it was accepted, one
    candidate, nothing ranked (no routing pass touches it, so nothing is stored)."""
    pinned = policies.pinning()
    why = sentence(pinned.why([Candidate(site)], None), (site,))
    return PlacementOut(decided_at=created_at, policy=pinned.name, hedge=1,
                        deadline=None, chosen=[site], why=why,
                        candidates=[CandidateOut(site=site, excluded=None, forecast=None,
                                                 p_deadline=None)],
                        job_id=job_id)


def _stored_candidate(stored: dict[str, object]) -> CandidateOut:
    # Stored as JSON: quantile pairs come back as lists; the schema makes them tuples.
    candidate: CandidateOut = parse(CandidateOut, stored)
    return candidate
