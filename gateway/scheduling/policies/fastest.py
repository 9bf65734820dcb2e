"""`fastest`, the default: the lowest predicted median completion (the 95% bound, home,
then the lighter backlog break ties), home kept unless the gain away clears the forecast's
uncertainty (home_guard.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.base import RoutingPolicy
from gateway.scheduling.policies.common import fastest_key, next_best, timing
from gateway.scheduling.policies.home_guard import guarded, stayed_home

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate

FASTEST = "fastest"


class Fastest(RoutingPolicy):
    """The site predicted to finish the job first."""

    name = FASTEST
    summary = "the site with the earliest predicted completion"
    prunes = True

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """Earliest predicted completion first, home first unless the leader clears it."""
        return guarded(sorted(open_, key=fastest_key))

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Its completion and bound, and the runner-up's completion (or why it stayed
        home when the runner-up looked sooner; a leader away that sooner sites did not
        welcome says it leads among those that did)."""
        best = ordered[0]
        if len(ordered) > 1 and fastest_key(ordered[1]) < fastest_key(best):
            return stayed_home(ordered, ordered[1])
        # Behind a leader away come home, then the sites that do not welcome the job,
        # which may be sooner than the leader.
        sooner = any(fastest_key(c) < fastest_key(best) for c in ordered[2:])
        among = " of the sites that welcome the job" if sooner else ""
        return (f"site '{best.site}' has the earliest predicted completion{among} "
                f"({timing(best)})" + next_best(ordered))


POLICY = Fastest()
