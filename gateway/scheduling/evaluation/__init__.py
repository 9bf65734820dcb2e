"""Offline evaluation: the federation simulator and the evaluators of every predictor.

Reached only from `gridgate simulate` and `benchmarks/`. Everything here replays workload
logs (Standard Workload Format) through the same production functions the worker runs
(`gateway.scheduling`: ranking, the forecaster, the wait and run-time predictors, the
black-hole rule), so a figure measured here is a figure of the code that routes jobs.
"""
