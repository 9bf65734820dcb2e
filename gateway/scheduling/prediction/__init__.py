"""What a job will do at a site, learnt from what jobs did before (pure).

Waits: `wait_predictor` (per-class histories, a calibrated 95% bound, a selected median)
over `wait_history` (one class's sliding window with change points) and `binomial`
(order-statistic bounds); `wait_points` (a forecast's probability points, read for the
chance of starting within a time); `history_import` (past waits from a site's accounting);
`routed_outcomes` (how the jobs routed to a site waited against their forecasts).
Run times: `runtime_predictor` (a user's runs of an application, scaled between sites)
with `scaling_fit` (run time against processor count). Staging: `staging_estimate`.
"""
