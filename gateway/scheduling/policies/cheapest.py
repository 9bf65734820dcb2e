"""`cheapest`: the lowest quote (the site's price for the job, milli-SU, given with the
candidate) among the sites predicted to finish by the optional deadline (median
completion), ties broken by `fastest`; a site without a quote after every priced one;
when no site is predicted to make the deadline, `fastest` over all of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.accounting.units import su
from gateway.scheduling.policies.base import DeadlineRule, RoutingPolicy
from gateway.scheduling.policies.common import fastest_key, forecast_of, timing

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate

CHEAPEST = "cheapest"


def _in_time(candidate: Candidate, deadline: float | None) -> bool:
    return deadline is None or forecast_of(candidate).completion <= deadline


def _price(candidate: Candidate) -> tuple[bool, int]:
    return candidate.quote_milli is None, candidate.quote_milli or 0


class Cheapest(RoutingPolicy):
    """The lowest price among the sites that make the deadline."""

    name = CHEAPEST
    summary = ("the site with the lowest quote among those predicted to finish by "
               "`deadline` (if given)")
    deadline_rule = DeadlineRule.OPTIONAL
    priced = True

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """In time and cheapest first; the late ones after, fastest first."""
        in_time = sorted((c for c in open_ if _in_time(c, deadline)),
                         key=lambda c: (*_price(c), *fastest_key(c)))
        # Late everywhere: a cheap site that misses the deadline is no bargain, so the
        # rest go fastest first (the nearest to making it).
        late = sorted((c for c in open_ if not _in_time(c, deadline)), key=fastest_key)
        return in_time + late

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Its quote (or why price could not decide), and the next cheapest in time."""
        best = ordered[0]
        in_time = " predicted to finish by the deadline" if deadline is not None else ""
        if not _in_time(best, deadline):
            return ("no site is predicted to finish by the deadline; site "
                    f"'{best.site}' has the earliest predicted completion ({timing(best)})")
        if best.quote_milli is None:
            return (f"no site{in_time} has a quote for this job; site '{best.site}' has "
                    f"the earliest predicted completion ({timing(best)})")
        among = f" of the sites{in_time}" if in_time else ""
        lead = (f"site '{best.site}' has the lowest quote{among} "
                f"({su(best.quote_milli)} SU; predicted completion {timing(best)})")
        runner = ordered[1] if len(ordered) > 1 else None
        if runner is not None and _in_time(runner, deadline):
            price = "no quote" if runner.quote_milli is None else f"{su(runner.quote_milli)} SU"
            lead += f"; next cheapest '{runner.site}' at {price}"
        return lead


POLICY = Cheapest()
