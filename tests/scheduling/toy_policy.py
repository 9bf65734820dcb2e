"""A toy routing policy, written as README "Add a routing policy" says: one module.

`slowest` sends a job to the site predicted to finish it last: the opposite of
`fastest`, so wherever it is obeyed its choices show (test_add_a_policy.py)."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.scheduling.policies.base import RoutingPolicy
from gateway.scheduling.policies.common import fastest_key, timing
from gateway.scheduling.ranking import Candidate


class Slowest(RoutingPolicy):
    """The site with the latest predicted completion."""

    name = "slowest"
    summary = "the site with the latest predicted completion"

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """Latest predicted completion first."""
        return sorted(open_, key=fastest_key, reverse=True)

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Its completion and bound."""
        best = ordered[0]
        return f"site '{best.site}' has the latest predicted completion ({timing(best)})"


POLICY = Slowest()
