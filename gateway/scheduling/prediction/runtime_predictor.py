"""Runtime predictor: how long a job will run at a site, from its user's past runs (pure).

History is kept per (user, application fingerprint, site); the fingerprint is whatever
names the application (executable, argument shape, container image; in a workload log
the executable number where the log has one). A prediction for p processors uses, in
order, the first rule that has data, always capped by the job's time limit (the
scheduler kills the job there):
1. the mean of the last two runs at p processors: Tsafrir, Etsion and Feitelson (IEEE
   TPDS 2007) found a user's last two runs predict the next far better than the user's
   own estimate; keeping them per processor count keeps a 4-processor test from
   predicting the 256-processor production run;
2. with runs at >= 3 processor counts, the scaling fit t(p) = a0 + a1/p + a2 log p
   (`scaling_fit.fit_scaling`) over the mean at each count;
3. the mean of the last two runs at any count (Tsafrir's rule as published);
4. the same rules at the site where the fingerprint ran last, times the speed ratio of
   the two sites: learned from fingerprints run at both at the same size (geometric
   mean of their runtime ratios), else from the sites' configured relative speeds (default 1);
5. rules 1-3 over the user's runs of any application at the site (Tsafrir et al.'s key:
   a user's new build or input keeps much of the old one's run time);
6. the time limit itself.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.scheduling.prediction.scaling_fit import MIN_COUNTS, ScalingFit, fit_scaling

LAST_RUNS = 2
# Runtime ratios kept per pair of sites: enough fingerprints that one odd application
# does not set a machine's speed, few enough to follow an upgrade within weeks.
RATIO_SAMPLES = 50


@dataclass(frozen=True, slots=True)
class RuntimeEstimate:
    """Predicted run time (seconds) and the rule that gave it, for the explanation.
    `known`: it comes from runs of this application (rules 1-4); False when it is the
    time limit or other applications' runs (rules 5-6), which rank the job but tell a
    person nothing about how long it runs."""

    seconds: float
    basis: str
    known: bool = True


@dataclass(slots=True)
class _Runs:
    """One (user, fingerprint, site)'s recent runs."""

    last: deque[float] = field(default_factory=lambda: deque(maxlen=LAST_RUNS))
    by_procs: dict[int, deque[float]] = field(default_factory=dict)
    fit: ScalingFit | None = None
    fitted: bool = True  # False while `fit` is stale (a run arrived since)

    def add(self, procs: int, runtime: float) -> None:
        self.last.append(runtime)
        self.by_procs.setdefault(procs, deque(maxlen=LAST_RUNS)).append(runtime)
        self.fitted = False

    def scaling(self) -> ScalingFit | None:
        if not self.fitted:
            self.fitted = True
            self.fit = None
            if len(self.by_procs) >= MIN_COUNTS:
                counts = sorted(self.by_procs)
                means = [_mean(self.by_procs[p]) for p in counts]
                if all(m > 0 for m in means):
                    self.fit = fit_scaling(counts, means)
        return self.fit

    def predict(self, procs: int) -> tuple[float, str] | None:
        same = self.by_procs.get(procs)
        if same:
            return _mean(same), f"last {len(same)} runs at {procs} processors"
        fit = self.scaling()
        if fit is not None:
            return fit.predict(procs), f"scaling fit over {len(self.by_procs)} sizes"
        if self.last:
            return _mean(self.last), f"last {len(self.last)} runs"
        return None


def _mean(values: deque[float]) -> float:
    return sum(values) / len(values)


class RuntimePredictor:
    """Per-(user, fingerprint, site) run histories; `observe` finished runs, `predict`."""

    def __init__(self, speeds: Mapping[str, float] | None = None) -> None:
        """`speeds`: each site's configured relative speed (higher is faster; default 1)."""
        self.speeds = dict(speeds or {})
        self._runs: dict[tuple[str, str, str], _Runs] = {}
        self._user_runs: dict[tuple[str, str], _Runs] = {}  # (user, site): any application
        self._last_site: dict[tuple[str, str], str] = {}
        self._sites: dict[tuple[str, str], set[str]] = {}
        self._ratios: dict[tuple[str, str], deque[float]] = {}

    def observe(self, user: str, fingerprint: str, site: str, procs: int,
                runtime: float) -> None:
        """Record a finished run (seconds) of `procs` processors."""
        if runtime <= 0 or procs <= 0:
            return  # a run that never ran says nothing about run time
        app = (user, fingerprint)
        self._runs.setdefault((user, fingerprint, site), _Runs()).add(procs, runtime)
        self._user_runs.setdefault((user, site), _Runs()).add(procs, runtime)
        self._last_site[app] = site
        sites = self._sites.setdefault(app, set())
        sites.add(site)
        # Only runs of the same size compare the machines, not the application's scaling.
        for other in sites - {site}:
            theirs = self._runs[(user, fingerprint, other)].by_procs.get(procs)
            if theirs:
                self._learn(other, site, math.log(runtime / _mean(theirs)))

    def _learn(self, from_site: str, to_site: str, log_ratio: float) -> None:
        # One sample list per unordered pair, stored as log(t[second] / t[first]).
        if from_site > to_site:
            from_site, to_site, log_ratio = to_site, from_site, -log_ratio
        self._ratios.setdefault((from_site, to_site), deque(maxlen=RATIO_SAMPLES)).append(
            log_ratio)

    def speed_ratio(self, from_site: str, to_site: str) -> float:
        """Run time at `to_site` over run time at `from_site` for the same job."""
        if from_site == to_site:
            return 1.0
        first, second = sorted((from_site, to_site))
        samples = self._ratios.get((first, second))
        if samples:
            log_ratio = sum(samples) / len(samples)
            return math.exp(log_ratio if first == from_site else -log_ratio)
        return self.speeds.get(from_site, 1.0) / self.speeds.get(to_site, 1.0)

    def predict(self, user: str, fingerprint: str, site: str, procs: int,
                limit: float) -> RuntimeEstimate:
        """Predicted run time of the job at `site`, capped by its time `limit` (seconds)."""
        found = self._uncapped(user, fingerprint, site, procs)
        if found is None:
            return RuntimeEstimate(limit, "time limit (no earlier runs)", known=False)
        seconds, basis, known = found
        if seconds >= limit:
            return RuntimeEstimate(limit, f"time limit ({basis} reach it)", known)
        return RuntimeEstimate(seconds, basis, known)

    def _uncapped(self, user: str, fingerprint: str, site: str,
                  procs: int) -> tuple[float, str, bool] | None:
        runs = self._runs.get((user, fingerprint, site))
        found = runs.predict(procs) if runs is not None else None
        if found is not None:
            return (*found, True)
        last = self._last_site.get((user, fingerprint))
        if last is not None:
            elsewhere = self._runs[(user, fingerprint, last)].predict(procs)
            if elsewhere is not None:
                ratio = self.speed_ratio(last, site)
                return elsewhere[0] * ratio, f"{elsewhere[1]} at '{last}' x {ratio:.2f}", True
        mine = self._user_runs.get((user, site))
        other_apps = mine.predict(procs) if mine is not None else None
        if other_apps is not None:
            return other_apps[0], f"{other_apps[1]} of other applications", False
        return None
