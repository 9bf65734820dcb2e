"""`deadline`: the highest probability of finishing by the job's deadline (which it
needs), then `fastest`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.scheduling.policies.base import DeadlineRule, RoutingPolicy
from gateway.scheduling.policies.common import fastest_key, next_best, p_finish

if TYPE_CHECKING:
    from gateway.scheduling.ranking import Candidate

DEADLINE = "deadline"


class Deadline(RoutingPolicy):
    """The site most likely to finish the job in time."""

    name = DEADLINE
    summary = "the site most likely to finish by `deadline`"
    deadline_rule = DeadlineRule.REQUIRED

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """Most likely to finish by `deadline` first, ties by `fastest`."""
        assert deadline is not None  # rank refuses this policy without one
        return sorted(open_, key=lambda c: (-p_finish(c, deadline), *fastest_key(c)))

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Its chance to make the deadline, and the runner-up's completion."""
        assert deadline is not None
        best = ordered[0]
        return (f"site '{best.site}' has the best chance to finish by the deadline "
                f"({p_finish(best, deadline):.0%})" + next_best(ordered))


POLICY = Deadline()
