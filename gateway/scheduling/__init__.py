"""Scheduling as pure functions: where a job may go and where it should.

Production: `admission` (may a site take this job now), `feasibility` and `constraints`
(hard limits and labels), `ranking` (order the candidates by a policy; route a pass),
`policies/` (the routing policies, one module each, and their registry),
the predictors (`forecaster`, `wait_predictor`, `wait_history`, `runtime_predictor`,
`queue_profile`, `easy`, `binomial`, `scaling_fit`, `staging_estimate`), `black_holes`
(sites that fail everyone's jobs), and `history_import`/`swf` (past waits from logs).
`evaluation/` replays workload logs through these same functions, offline.
"""
