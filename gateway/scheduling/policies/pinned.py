"""`pinned`: the policy of a job that names its site. Nothing is weighed: the job has one
candidate, the site it names (routing passes never take it; an estimate shows it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.base import RoutingPolicy
from gateway.scheduling.policies.common import fastest_key

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate

PINNED = "pinned"


class Pinned(RoutingPolicy):
    """The site the job names."""

    name = PINNED
    summary = "the site the job names"
    pins = True

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """The named site (a stable order should there be more)."""
        return sorted(open_, key=fastest_key)

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """The job's own choice: no runner-up to name."""
        return f"the job names site '{ordered[0].site}'"


POLICY = Pinned()
