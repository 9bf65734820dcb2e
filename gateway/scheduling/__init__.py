"""Scheduling as pure functions: where a job may go and where it should.

Production: `admission` (may a site take this job now), `feasibility` and `constraints`
(hard limits and labels), `ranking` (order the candidates by a policy; route a pass),
`policies/` (the routing policies, one module each, and their registry),
`forecaster` (a job's forecast at each site, for ranking) over `prediction/` (waits,
run times and staging learnt from past jobs) and `queues/` (a site's queue as its
scheduler will run it), `guest_ledger` (what each site's users got elsewhere against
what it gave guests), `black_holes` (sites that fail everyone's jobs), and `swf`
(workload logs). `evaluation/` replays workload logs through these same functions,
offline.
"""
