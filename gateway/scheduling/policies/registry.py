"""The routing policy registry: policy name -> its `RoutingPolicy`. The only switch on a
policy's name.

The job spec (the names `routing.policy` accepts, its deadline rules and their JSON
Schema), the router (`ranking.rank`), placement (which jobs are priced), the decision
documents (`explain`, estimates) and the simulator (`simulation.policy_names`: its own
baselines, then `replayable()`) all read this table, when they run: a policy registered
here is routable, explainable and simulated with no other edit. Adding a policy is one
module in this package and one line below.
"""

from __future__ import annotations

from gateway.scheduling.policies import cheapest, deadline, fastest, pinned
from gateway.scheduling.policies.base import DeadlineRule, RoutingPolicy

REGISTERED: tuple[RoutingPolicy, ...] = (
    fastest.POLICY,
    deadline.POLICY,
    cheapest.POLICY,
    pinned.POLICY,
)

# A `site: auto` job's policy when its spec names none.
DEFAULT = fastest.FASTEST


def names() -> tuple[str, ...]:
    """Every registered policy's name, in registration order."""
    return tuple(p.name for p in REGISTERED)


def policy(name: str) -> RoutingPolicy:
    """The policy called `name`; ValueError when none is."""
    for registered in REGISTERED:
        if registered.name == name:
            return registered
    raise ValueError(f"unknown routing policy {name!r}")


def pinning() -> RoutingPolicy:
    """The policy of a job that names its site."""
    return next(p for p in REGISTERED if p.pins)


def deadline_names(rule: DeadlineRule) -> tuple[str, ...]:
    """The policies whose deadline rule is `rule`."""
    return tuple(p.name for p in REGISTERED if p.deadline_rule is rule)


def replayable() -> tuple[str, ...]:
    """The policies a simulation can run on a workload log: a log's job names no site,
    has no deadline and no price, so pinning, deadline-needing and priced policies
    are left out (`cheapest` would rank as `fastest` there)."""
    return tuple(p.name for p in REGISTERED
                 if not p.pins and not p.priced and p.deadline_rule is not DeadlineRule.REQUIRED)
