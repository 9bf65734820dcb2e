"""Routing that never hurts: a job leaves its home site only for a gain its forecasts can
vouch for (pure).

A job's home is where it would run without routing (`Candidate.home`). Forecasts err,
and a router that moves jobs on a small predicted gain moves them on its errors: on a
federation it had never seen, moving every job to the site with the best median made the
mean bounded slowdown 28% worse than leaving every job home. So a site away leads only
when the job finishes there, with its wait at the site's 95% bound, before it would
finish at home with the median wait: the gain clears the away forecast's own
uncertainty. The bound is calibrated on outcomes (wait_predictor.py), and each site's
medians on the waits of the jobs the router sent there (routed_outcomes.py), so a site
whose forecasts proved optimistic loses its pull at once.

A right forecast for the job moved is not enough: at its destination it is a guest, and
what it takes is not there for the destination's own users. On KTH+CTC (days 180-360)
the router filled KTH with CTC's jobs, forecast right on average (5,893 s predicted,
5,728 s waited), and KTH's own jobs kept at home waited twice as long. So a guest goes
only where it starts at once even if every job there runs to its limit
(`delays_no_one`): it takes processors no queued job is planned on, and never queues
ahead of the site's users' next jobs. A site that does not welcome the job ranks behind
home.

A job that cannot run at home (excluded there) has no home to guard: it goes where the
policy's order says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.common import duration, forecast_of

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate, Forecast


def delays_no_one(forecast: Forecast) -> bool:
    """Whether the job starts now there even if every job runs to its limit: it takes
    only processors no queued job is planned on, and queues ahead of no later one (the
    walltime projection; without one, the median wait)."""
    projected = forecast.projected_wait
    return (projected if projected is not None else forecast.wait_median) <= 0


def welcomes(away: Candidate) -> bool:
    """Whether the job may be a guest at `away`: it would delay no one there."""
    return delays_no_one(forecast_of(away))


def clears(away: Candidate, home: Candidate) -> bool:
    """Whether `away` welcomes the job and its 95% completion bound beats `home`'s median
    completion."""
    return welcomes(away) and forecast_of(away).completion_bound < forecast_of(home).completion


def guarded(ordered: Sequence[Candidate]) -> list[Candidate]:
    """`ordered` (best first) with the home site moved to the front unless the leader
    away clears it (`clears`) or the job has no open home; the sites away that do not
    welcome the job (`welcomes`) behind home."""
    ranked = list(ordered)
    home = next((c for c in ranked if c.home), None)
    if home is None:
        return ranked
    # A site that does not welcome the job ranks behind home, so the leader away is
    # checked among those that do.
    ahead = ranked.index(home)
    closed = [c for c in ranked[:ahead] if not welcomes(c)]
    if closed:
        ranked = [c for c in ranked[:ahead] if welcomes(c)] + [home, *closed] \
            + ranked[ahead + 1:]
    if ranked[0] is home or clears(ranked[0], home):
        return ranked
    ranked.remove(home)
    return [home, *ranked]


def stayed_home(ordered: Sequence[Candidate], runner_up: Candidate) -> str:
    """Why the guard kept the job home although `runner_up` had the better median."""
    home = forecast_of(ordered[0])
    away = forecast_of(runner_up)
    lead = (f"site '{ordered[0].site}' is the job's home ({duration(home.completion)}); "
            f"'{runner_up.site}' is predicted sooner ({duration(away.completion)}) but ")
    if away.completion_bound < home.completion:  # the bound clears: it would queue
        return lead + "the job would queue there ahead of its own users' next jobs"
    return lead + f"its 95% bound ({duration(away.completion_bound)}) does not beat home"
