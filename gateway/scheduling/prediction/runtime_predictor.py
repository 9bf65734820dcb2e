"""Runtime predictor: how long a job will run at a site, from its user's past runs (pure).

History is kept per (user, application fingerprint), each run tagged with the site it
ran at; the fingerprint is whatever names the application (executable, argument shape,
container image; in a workload log the executable number where the log has one, else ""
for an unknown application). A prediction for p processors at a site uses, in order, the
first rule that has data, always capped by the job's time limit (the scheduler kills the
job there):
1. the mean of the last two runs at p processors: Tsafrir, Etsion and Feitelson (IEEE
   TPDS 2007) found a user's last two runs predict the next far better than the user's
   own estimate; keeping them per processor count keeps a 4-processor test from
   predicting the 256-processor production run;
2. with runs at >= 3 processor counts at the site where the application ran last, the
   scaling fit t(p) = a0 + a1/p + a2 log p (`scaling_fit.fit_scaling`) over the mean at
   each count;
3. the mean of the last two runs at any count (Tsafrir's rule as published);
4. rules 1-3 over the user's runs of any application (Tsafrir et al.'s key: a
   user's new build or input keeps much of the old one's run time);
5. the time limit itself.
The last runs are the application's last runs wherever they ran, each times the speed
ratio of its site to this one: the sites' configured relative speeds (default 1), unless
fingerprints run at both at the same size and time limit say otherwise beyond their
noise (the median of their runtime ratios, where a sign test at two standard deviations
puts them on one side of the configured ratio). So every site is predicted from the same
runs and differs only by speed: were each site predicted from the runs that happened to
land there, a router would send a job to whichever site's sample of its user's runs was
shortest (a 47-hour job moved on a 9-hour run it once had at the other site).
An unknown application ("") never teaches a speed ratio: two of its runs need not be the
same program.
"""

from __future__ import annotations

import math
import statistics
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
    """One (user, fingerprint, site)'s runs per processor count, for its scaling fit and
    the speed ratios."""

    by_procs: dict[int, deque[float]] = field(default_factory=dict)
    # Per (processors, time limit): the runs that compare two machines.
    alike: dict[tuple[int, float | None], deque[float]] = field(default_factory=dict)
    fit: ScalingFit | None = None
    fitted: bool = True  # False while `fit` is stale (a run arrived since)

    def add(self, procs: int, runtime: float, limit: float | None) -> None:
        self.by_procs.setdefault(procs, deque(maxlen=LAST_RUNS)).append(runtime)
        self.alike.setdefault((procs, limit), deque(maxlen=LAST_RUNS)).append(runtime)
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


# (site, run time) of one run.
_Run = tuple[str, float]
# (user, fingerprint) of an application; fingerprint ANY: the user's runs of any.
_App = tuple[str, str | None]
ANY = None


@dataclass(slots=True)
class _Last:
    """The last runs of an application (or of a user's applications), wherever they
    ran: overall and per processor count."""

    last: deque[_Run] = field(default_factory=lambda: deque(maxlen=LAST_RUNS))
    by_procs: dict[int, deque[_Run]] = field(default_factory=dict)

    def add(self, site: str, procs: int, runtime: float) -> None:
        self.last.append((site, runtime))
        self.by_procs.setdefault(procs, deque(maxlen=LAST_RUNS)).append((site, runtime))


def _mean(values: deque[float]) -> float:
    return sum(values) / len(values)


class RuntimePredictor:
    """Per-(user, fingerprint) run histories tagged by site; `observe` finished runs,
    `predict`."""

    def __init__(self, speeds: Mapping[str, float] | None = None) -> None:
        """`speeds`: each site's configured relative speed (higher is faster; default 1)."""
        self._speeds = dict(speeds or {})
        self._runs: dict[tuple[str, str | None, str], _Runs] = {}  # (*app, site)
        self._last: dict[_App, _Last] = {}
        self._last_site: dict[_App, str] = {}
        self._sites: dict[_App, set[str]] = {}
        self._ratios: dict[tuple[str, str], deque[float]] = {}
        # Each pair's ratio as last worked out, until a run teaches one (a routing pass
        # asks it per job and site, and learns nothing meanwhile).
        self._speed_ratios: dict[tuple[str, str], float] = {}

    def observe(self, user: str, fingerprint: str, site: str, procs: int,
                runtime: float, limit: float | None = None) -> None:
        """Record a finished run (seconds) of `procs` processors under time `limit`
        (None: unknown)."""
        if runtime <= 0 or procs <= 0:
            return  # a run that never ran says nothing about run time
        for app in ((user, fingerprint), (user, ANY)):
            self._runs.setdefault((*app, site), _Runs()).add(procs, runtime, limit)
            self._last.setdefault(app, _Last()).add(site, procs, runtime)
            self._last_site[app] = site
            self._sites.setdefault(app, set()).add(site)
        if not fingerprint:
            return  # an unknown application compares nothing
        # Only runs of the same size compare the machines, not the application's scaling;
        # and only under the same limit: a router sends a job by its limit, so long
        # requests of one application land where long waits are shorter, and comparing
        # them with its short runs elsewhere would measure the routing, not the machine.
        for other in self._sites[user, fingerprint] - {site}:
            theirs = self._runs[(user, fingerprint, other)].alike.get((procs, limit))
            if theirs:
                self._learn(other, site, math.log(runtime / _mean(theirs)))

    def _learn(self, from_site: str, to_site: str, log_ratio: float) -> None:
        # One sample list per unordered pair, stored as log(t[second] / t[first]).
        if from_site > to_site:
            from_site, to_site, log_ratio = to_site, from_site, -log_ratio
        self._ratios.setdefault((from_site, to_site), deque(maxlen=RATIO_SAMPLES)).append(
            log_ratio)
        self._speed_ratios.clear()

    def speed_ratio(self, from_site: str, to_site: str) -> float:
        """Run time at `to_site` over run time at `from_site` for the same job."""
        if from_site == to_site:
            return 1.0
        found = self._speed_ratios.get((from_site, to_site))
        if found is None:
            found = self._speed_ratios[from_site, to_site] = self._ratio(from_site, to_site)
        return found

    def _ratio(self, from_site: str, to_site: str) -> float:
        configured = math.log(self._speeds.get(from_site, 1.0) / self._speeds.get(to_site, 1.0))
        first, second = sorted((from_site, to_site))
        samples = self._ratios.get((first, second))
        if not samples:
            return math.exp(configured)
        sign = 1.0 if first == from_site else -1.0
        ratios = [sign * sample for sample in samples]
        # The learned ratio (the median pair's) replaces the configured one only where
        # clearly more pairs than chance lie on one side of it (a sign test at two
        # standard deviations): runs of one application vary with their inputs by orders
        # of magnitude, and a few odd pairs would otherwise make a machine look 3x
        # faster and pull every job there.
        above = sum(1 for ratio in ratios if ratio > configured)
        below = sum(1 for ratio in ratios if ratio < configured)
        if abs(above - below) <= 2.0 * math.sqrt(above + below):
            return math.exp(configured)
        return math.exp(statistics.median(ratios))

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
        found = self._rules((user, fingerprint), site, procs)
        if found is not None:
            return (*found, True)
        mine = self._rules((user, ANY), site, procs)
        if mine is not None:
            return mine[0], f"{mine[1]} of other applications", False
        return None

    def _rules(self, app: _App, site: str, procs: int) -> tuple[float, str] | None:
        """Rules 1-3 over `app`'s runs, in `site`'s time."""
        runs = self._last.get(app)
        if runs is None:
            return None
        same = runs.by_procs.get(procs)
        if same:
            return self._here(same, site, f"last {len(same)} runs at {procs} processors")
        last = self._last_site[app]
        at_last = self._runs[(*app, last)]
        fit = at_last.scaling()
        if fit is not None:
            ratio = self.speed_ratio(last, site)
            where = "" if last == site else f" at '{last}' x {ratio:.2f}"
            return (fit.predict(procs) * ratio,
                    f"scaling fit over {len(at_last.by_procs)} sizes{where}")
        return self._here(runs.last, site, f"last {len(runs.last)} runs")

    def _here(self, runs: deque[_Run], site: str, named: str) -> tuple[float, str]:
        """The mean of `runs` in `site`'s time, and the basis `named` says where they ran."""
        ratios = {where: self.speed_ratio(where, site) for where, _ in runs}
        seconds = sum(runtime * ratios[where] for where, runtime in runs) / len(runs)
        away = [f"'{where}' x {ratio:.2f}" for where, ratio in ratios.items() if where != site]
        if not away:
            return seconds, named
        if len(away) == len(ratios):
            return seconds, f"{named} at {', '.join(away)}"
        return seconds, f"{named}, here and at {', '.join(away)}"
