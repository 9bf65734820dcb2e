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
what it takes is not there for the destination's own users. So a site away that does
not welcome the job (`Forecast.welcome`: it would queue there, and the site's users
have been given less at other sites than its guests there, guest_ledger.py) ranks
behind home, and the leader away is chosen among those that do.

A job that cannot run at home (excluded there) has no home to guard: it goes where the
policy's order says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.common import duration, forecast_of

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate


def clears(away: Candidate, home: Candidate) -> bool:
    """Whether `away`'s 95% completion bound beats `home`'s median completion."""
    return forecast_of(away).completion_bound < forecast_of(home).completion


def guarded(ordered: Sequence[Candidate]) -> list[Candidate]:
    """`ordered` (best first) with the sites away that do not welcome the job behind
    home, and home moved to the front unless the leader away clears it (`clears`) or
    the job has no open home."""
    ranked = list(ordered)
    home = next((c for c in ranked if c.home), None)
    if home is None:
        return ranked
    ahead = ranked.index(home)
    closed = [c for c in ranked[:ahead] if not forecast_of(c).welcome]
    if closed:
        ranked = [c for c in ranked[:ahead] if forecast_of(c).welcome] + [home, *closed] \
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
    if not away.welcome:
        return lead + ("the job would queue there, and that site's users have been given "
                       "less at other sites than its guests there")
    return lead + f"its 95% bound ({duration(away.completion_bound)}) does not beat home"
