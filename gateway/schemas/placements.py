"""Routing decisions as the API sends them: a job's placement (GET /jobs/{id}/placement,
the decision as it was made and stored) and an estimate (POST /jobs:estimate, the same
computation for a spec, nothing stored or submitted).

Times in a forecast are seconds from `decided_at` (the moment of the decision): the
predicted start is `decided_at + staging + wait_likely` (`wait_median` in decisions that
have no likely wait: `predicted_start`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NotRequired

from typing_extensions import TypedDict


class ForecastOut(TypedDict):
    """One site's prediction for the job, in seconds from the decision."""

    wait_median: float
    wait_bound: float  # 95% upper bound on the queue wait
    # Predicted from this application's earlier runs; None (unknown) without any. The
    # completions count what routing assumed then (the basis says what: the time limit,
    # or the user's other applications).
    runtime: float | None
    staging: float
    completion: float  # staging + median wait + run time
    completion_bound: float  # staging + 95% bound on the wait + run time
    # (probability, wait) points of the wait's distribution, as the forecaster gave them.
    wait_quantiles: list[tuple[float, float]]
    # Where the wait came from (observed waits, the live queue, the scheduler's estimate).
    basis: str
    # Work queued at the site ahead of the job, seconds of the whole site (breaks ties).
    backlog: NotRequired[float]
    # The factor on 1 + median wait for how the jobs routed to the site lately waited
    # against their forecasts; absent when 1.
    calibration: NotRequired[float]
    # The walltime projection of the wait on the site's queue, when the forecaster had
    # the queue: the class of the wait history the job's wait is recorded in.
    projected_wait: NotRequired[float]
    # The likely wait: the centre of the +-10 min window the job most probably starts in
    # (the median is what routing ranks by; this is the best single time to tell).
    wait_likely: NotRequired[float]
    # The wait if the job has not started within 10 min: the median wait of the jobs
    # alike that did not (a job that waits is told how long, not "10 min"); absent when
    # no history has seen such a wait.
    wait_if_late: NotRequired[float]
    # What the late-wait model knew of the job here when it forecast `wait_if_late`
    # (gateway.scheduling.prediction.late_waits: the job, the queue's load, the
    # forecast, the site's hour and weekday; -1: not known): once the job starts here,
    # its wait is learned with them.
    late_features: NotRequired[dict[str, float]]
    # The wait history's calibrated 95% bound for the job's class, before the live queue
    # floored it, the account's hold raised it or routed outcomes scaled it; absent when
    # no history answered. Once the job starts here, its wait calibrates the bounds
    # against this one (gateway.scheduling.prediction.wait_predictor).
    class_bound: NotRequired[float]
    # False when the job would be a guest here that queues and the site's users have been
    # given less at other sites than its guests here: it ranks behind home (the guest
    # ledger); absent else.
    welcome: NotRequired[bool]


class CandidateOut(TypedDict):
    """One site for the job: excluded (and why), or its forecast. In ranked order."""

    site: str
    excluded: str | None
    forecast: ForecastOut | None
    # P(finishing by the deadline) when the job has one (deadline or cheapest policy).
    p_deadline: float | None
    # What the job would cost at the site, in SU ("8.000"), when routing priced it (the
    # bank on, or the cheapest policy); absent otherwise.
    quote_su: NotRequired[str]
    # How the container image reaches the site when the gateway pulls a registry image the
    # site cannot ("docker://... is pulled by the gateway and staged (...)"); absent else.
    image: NotRequired[str]
    # Why this open site is a last resort: it is out of routing (a black hole) but no
    # other site can take the job now; absent else.
    caution: NotRequired[str]
    # True for the job's home (where its owner's jobs ran last): a job leaves it only
    # when the gain clears the forecasts' uncertainty; absent else.
    home: NotRequired[bool]
    # Open but not forecast: routing ranked the sites that could come first or second
    # and this one cannot finish the job before this many seconds from the decision,
    # later than they do (`fastest` without a hedge, in a routing pass); absent else.
    not_before: NotRequired[float]


class EstimateOut(TypedDict):
    """What routing would decide for a spec now (nothing stored, nothing submitted)."""

    decided_at: datetime
    policy: str
    hedge: int
    deadline: datetime | None
    chosen: list[str]  # best first; empty when no site can take the job now
    why: str
    candidates: list[CandidateOut]


class PlacementOut(EstimateOut):
    """The routing decision that placed a job, as it was made."""

    job_id: str


def predicted_start(decided_at: datetime, candidates: Sequence[Mapping[str, Any]],
                    sites: Sequence[str]) -> datetime | None:
    """When a decision predicted the job to start at the first of `sites` it starts at
    (a hedge starts at the earliest), or None when it forecast none of them."""
    starts = []
    for candidate in candidates:
        forecast = candidate.get("forecast")
        if candidate.get("site") not in sites or not forecast:
            continue
        seconds = float(forecast["staging"]) + float(
            forecast.get("wait_likely", forecast["wait_median"]))
        if math.isfinite(seconds):
            starts.append(decided_at + timedelta(seconds=seconds))
    return min(starts, default=None)
