"""A small deterministic federation and its routing pass, as plain data.

`test_recorded_pass.py` compares the pass with `data/recorded_pass.json.gz`, written by
the router before its per-pass caches (forecasts shared by jobs alike, starts kept while a
profile's reservations miss them): the caches must not move a decision or a forecast.
Regenerated once since, when forecasts gained the wait history's spread (it moves the
deadline policy's decisions), by the cached router after its pass had matched the first
recording in every decision and forecast; every field of every forecast is recorded now.
Jobs repeat (few users, applications, sizes and limits) so that the caches are hit, and
sites get commits between repeats so that they are invalidated too. Regenerate only for
a change that is meant to move decisions:

    PYTHONPATH=. python -m tests.scheduling.recorded_pass | gzip -9 \
        > tests/scheduling/data/recorded_pass.json.gz
"""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.guest_ledger import GuestLedger
from gateway.scheduling.prediction.routed_outcomes import RoutedOutcomes
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.staging_estimate import TransferRates
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Candidate, Routing, route_pass
from gateway.scheduling.routing_inputs import JobNeed, SiteState

SITES = 9
JOBS = 600
USERS = ("ann", "bob", "cy")
APPS = ("lammps", "wrf")
SIZES = (1, 4, 16, 64, 256)
LIMITS = (600.0, 3600.0, 14400.0)
POLICIES = (("fastest", 1, None), ("fastest", 2, None), ("deadline", 1, 20_000.0),
            ("cheapest", 1, None), ("cheapest", 1, 8_000.0))


def _queue(rng: random.Random, processors: int) -> QueueState:
    running = tuple((rng.choice((1, 8, 32, processors // 2)), rng.uniform(-50, 5000),
                     rng.uniform(100, 8000)) for _ in range(rng.randint(0, 12)))
    queued = tuple((rng.choice((1, 4, 16, 64, processors)), rng.uniform(60, 6000),
                    rng.choice(LIMITS)) for _ in range(rng.randint(0, 40)))
    return QueueState(processors, running, queued)


def federation(seed: int = 27, make: type[SiteForecaster] = SiteForecaster,
               guests: bool = False) -> tuple[SiteForecaster, list[JobNeed], dict[str, int]]:
    """The forecaster, the pending jobs (oldest first) and each site's processors."""
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(SITES)]
    sites = [SiteState(name, _queue(rng, rng.choice((64, 128, 256, 512))),
                       frozenset({"site://data/big"}) if i % 3 == 0 else frozenset())
             for i, name in enumerate(names)]
    waits, runtimes, outcomes = WaitPredictor(), RuntimePredictor(), RoutedOutcomes()
    for _ in range(4000):
        site = rng.choice(names[:-2])  # the last two sites have no history
        procs, limit = rng.choice(SIZES), rng.choice(LIMITS)
        projected = rng.choice((None, rng.uniform(0, 20_000)))
        waits.observe(JobClass(site, "batch", procs, limit, projected, rng.choice(USERS)),
                      rng.expovariate(1 / 1800))
    for _ in range(1500):
        runtimes.observe(rng.choice(USERS), rng.choice(APPS), rng.choice(names),
                         rng.choice(SIZES), rng.uniform(30, 12_000))
    for _ in range(200):
        outcomes.observe(rng.choice(names[:3]), rng.uniform(0, 600), rng.uniform(0, 9000))
    rates = TransferRates(defaults={name: rng.choice((10e6, 100e6)) for name in names[::2]})
    jobs = []
    for index in range(JOBS):
        inputs = (("site://data/big", 5_000_000_000),) if rng.random() < 0.2 else ()
        jobs.append(JobNeed(rng.choice(USERS), rng.choice(APPS), rng.choice(SIZES),
                            rng.choice(LIMITS), "batch", inputs,
                            0 if rng.random() < 0.8 else 1_000_000_000, key=f"j{index}",
                            home=names[index % len(names)] if guests else None))
    forecaster = make(sites, waits, runtimes, rates, outcomes=outcomes,
                      ledger=GuestLedger() if guests else None)
    return forecaster, jobs, {site.name: site.queue.processors for site in sites}


class Unbounded(SiteForecaster):
    """The forecaster without bounds (0 everywhere): a pass then forecasts every site."""

    def earliest_completion(self, job: JobNeed, site: str, walk: bool = False) -> float:
        return 0.0


def run(seed: int = 27, policy: str | None = None, bounds: bool = True,
        guests: bool = False) -> list[Routing[JobNeed]]:
    """The pass over `federation(seed)`: hard constraints, quotes, homes, policies (or
    every job under `policy`, without a hedge); `bounds` False: no site left unforecast;
    `guests`: a guest ledger, each job's home its own (sites may not welcome it)."""
    forecaster, jobs, size = federation(seed, SiteForecaster if bounds else Unbounded,
                                        guests)
    names = list(size)

    def exclusions(job: JobNeed) -> list[Candidate]:
        home = names[int(job.key[1:]) % len(names)]  # = job.home with `guests`
        return [Candidate(name, "too small" if job.procs > size[name]
                          else "banned" if (name, job.user) == ("s4", "bob") else None,
                          quote_milli=None if name == "s5" else 1000 + 37 * i * job.procs,
                          home=name == home)
                for i, name in enumerate(names)]

    return route_pass(jobs, exclusions, forecaster,
                      lambda job: POLICIES[int(job.key[1:]) % len(POLICIES)]
                      if policy is None else (policy, 1, None))


def as_data(routed: list[Routing[JobNeed]]) -> list[dict[str, Any]]:
    """Every decision and every candidate's forecast, JSON-ready (floats exact)."""
    data: list[dict[str, Any]] = json.loads(json.dumps(
        [{"job": r.job.key, **dataclasses.asdict(r.decision)} for r in routed]))
    # Recorded before the late-wait model, which this pass lacks, and before forecasts
    # carried their class's bound: never above the bound told, and none without history.
    for decision in data:
        for candidate in decision["candidates"]:
            forecast = candidate["forecast"]
            if forecast is not None:
                assert forecast.pop("late_features") is None
                class_bound = forecast.pop("class_bound")
                assert (class_bound is None) == forecast["basis"].startswith("live queue")
                assert class_bound is None or class_bound <= forecast["wait_bound"]
    return data


if __name__ == "__main__":
    print(json.dumps(as_data(run()), indent=None, separators=(",", ":")))
