"""The routing policy protocol: what every policy in the registry gives."""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only for annotations: ranking imports the registry
    from gateway.scheduling.ranking import Candidate


class DeadlineRule(StrEnum):
    """What a policy does with the job's `routing.deadline` (the job spec enforces it)."""

    NONE = "none"  # a spec giving a deadline under this policy is refused
    OPTIONAL = "optional"
    REQUIRED = "required"  # a spec without a deadline is refused


class RoutingPolicy(Protocol):
    """One way to choose a `site: auto` job's sites. A policy module subclasses this
    protocol (keeping the defaults below) and defines `name`, `summary`, `order`, `why`.

    `name` is the word the job spec's `routing.policy`, a stored decision and `gridgate
    simulate --policy` use; `summary` is what the policy chooses, one clause for the job
    spec's schema ("the site with the earliest predicted completion").
    """

    name: str
    summary: str
    deadline_rule: DeadlineRule = DeadlineRule.NONE
    # Orders by the sites' quotes: routing prices the job even when the bank is off.
    priced: bool = False
    # The policy of a job that names its site (one candidate, nothing to weigh); a spec
    # names a site exactly when its policy pins.
    pins: bool = False
    # Orders by `common.fastest_key` under the home guard and its sentence reads only the
    # first two sites (and any site sooner than the first): a routing pass need not
    # forecast a site that cannot finish before them (`ranking.route_pass`).
    prunes: bool = False

    def order(self, open_: Sequence[Candidate], deadline: float | None) -> list[Candidate]:
        """Every candidate of `open_` (none excluded, each forecast), best first.
        `deadline`: seconds from now, given when the job has one."""
        ...

    def why(self, ordered: Sequence[Candidate], deadline: float | None) -> str:
        """Why `ordered[0]` comes first (and, where it helps, what comes next): a clause
        in lower case without a full stop; `ranking.rank` makes the sentence, adding the
        hedge and any caution."""
        ...
