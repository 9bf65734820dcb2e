"""What the policies share: the `fastest` order that breaks every tie, and the wording
of times in the reasons."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate, Forecast


def forecast_of(candidate: Candidate) -> Forecast:
    """The candidate's forecast (a policy only ever sees forecast candidates)."""
    forecast = candidate.forecast
    assert forecast is not None
    return forecast


def fastest_key(candidate: Candidate) -> tuple[float, float, bool, float]:
    """Predicted median completion, then the 95% bound, then home before away, then the
    smaller backlog; sorts are stable, so sites still equal keep the caller's order (the
    configuration's). Never the name: renaming a site must not move a job."""
    forecast = forecast_of(candidate)
    return (forecast.completion, forecast.completion_bound, not candidate.home,
            forecast.backlog)


def p_finish(candidate: Candidate, deadline: float) -> float:
    """P(the job finishes at the candidate within `deadline` seconds)."""
    return forecast_of(candidate).p_finish_within(deadline)


def timing(candidate: Candidate) -> str:
    """The candidate's completion and its 95% bound: "83 min, 95% bound 2.0 h"."""
    forecast = forecast_of(candidate)
    return f"{duration(forecast.completion)}, 95% bound {duration(forecast.completion_bound)}"


def next_best(ordered: Sequence[Candidate]) -> str:
    """The runner-up, "; next best 'b' at 12 min", or nothing when there is none."""
    if len(ordered) < 2:
        return ""
    runner = ordered[1]
    return f"; next best '{runner.site}' at {duration(forecast_of(runner).completion)}"


def duration(seconds: float) -> str:
    """Seconds as a reason reads them: "45 s", "12 min", "1.5 h"."""
    seconds = max(seconds, 0.0)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
