"""`fastest`, the default: the lowest predicted median completion; the 95% bound, then the
site name, break ties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.base import RoutingPolicy
from gateway.scheduling.policies.common import fastest_key, next_best, timing

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate

FASTEST = "fastest"


class Fastest(RoutingPolicy):
    """The site predicted to finish the job first."""

    name = FASTEST
    summary = "the site with the earliest predicted completion"

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """Earliest predicted completion first."""
        return sorted(open_, key=fastest_key)

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Its completion and bound, and the runner-up's completion."""
        best = ordered[0]
        return (f"site '{best.site}' has the earliest predicted completion ({timing(best)})"
                + next_best(ordered))


POLICY = Fastest()
