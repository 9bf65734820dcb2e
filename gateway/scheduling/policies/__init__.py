"""Routing policies: how the sites open to a `site: auto` job are ordered, and why.

This package owns every production routing policy and their registry:
- `base.RoutingPolicy`: the protocol (a name, what the job spec says of it, how it uses
  a deadline and quotes, `order` the open candidates, say `why` the first is best);
- one module per policy: `fastest` (the default), `deadline`, `cheapest`, `pinned`;
- `common`: the sort key and wording the policies share;
- `registry`: policy name -> policy, the only switch on a name. The job spec (the names
  it accepts, its deadline rules), the router (`ranking.rank`), placement (pricing),
  the decision documents (`explain`, estimates) and the simulator
  (`simulation.policy_names`) all read it.

Adding a policy is one module here and one line in `registry.REGISTERED` (docs/design/
add-a-routing-policy.md). Pure: no I/O, nothing but the candidates given.
"""
