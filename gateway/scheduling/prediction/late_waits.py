"""The wait of a late job, learned from what was known at its submit (pure).

A job that has not started within 10 minutes may wait an hour or a week: the class
medians of `WaitPredictor.if_late` condition on one thing at a time (the bound's class)
and on no clock, yet how long such a job waits depends on the job, the queue and the
hour together (a 4-hour job submitted on a Friday evening behind a full machine). So
each site keeps the late waits of the jobs it started, each with what was known of its
job at submit (`late_features`), and fits boosted trees to their median
(`boosted_trees.py`, on log(1 + wait): a factor off counts the same at any length).

Online and bounded: the model is fitted on the site's last `WINDOW` late waits, first
once `MINIMUM` are known, then again once `REFIT` more are known and at least
`REFIT_AFTER` of the site's time has passed since the last fit (four weeks, four of the
clock features' cycles: a budget, not a score). Until its first fit a site has no
learned point and the forecaster tells the class median. A fit costs about a second of
CPU (5,000 rows), so the cost of a walk grows with the span of its log, not with its
late jobs (the 450,000-job walk, benchmarks/prediction_walk_speed.py, fits 52 times);
a prediction is one compiled expression of 50 small trees (a few microseconds).

Measured on the four shared logs through production's forecaster (docs/design/
predictors.md, the wait if late); the sizes (window, refit, trees) are cost bounds,
not choices scored on a log. The features are generic (no log's names or sizes).

Feed it the features a forecast carried (`Forecast.late_features`) with the job's wait
once it starts, keyed so that a row given twice (production reads its recent starts
again each routing pass) is kept once.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter, mul
from threading import Lock

from gateway.scheduling.prediction.boosted_trees import BoostedTrees, fit_boosted_trees
from gateway.scheduling.queues.queue_state import QueueState

TOLERANCE = 600.0  # a job is late once it has waited this long (the +-10 min of a start)
WINDOW = 5000
MINIMUM = 500
REFIT = 500
REFIT_AFTER = 28 * 86400.0
LATE_FEATURES = (
    "processors", "time_limit",
    "queued_jobs", "running_jobs", "queued_work", "busy_processors", "running_work_left",
    "walltime_projection", "wait_median", "wait_bound", "class_wait_if_late",
    "hour", "weekday",
)
UNKNOWN = -1.0
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
Features = tuple[float, ...]


@dataclass(frozen=True, slots=True)
class QueueLoad:
    """What the late-wait model reads of a site's queue: jobs queued and running, the
    queued jobs' predicted work, processors busy and the running jobs' predicted work
    left (processor-seconds)."""

    queued: int
    running: int
    queued_work: float
    busy: int
    running_left: float

    @classmethod
    def of(cls, queue: QueueState, queued_work: float) -> QueueLoad:
        """The load of a queue snapshot whose queued work is known (`PassSite` sums it
        once for the backlog too: a walk asks at every submit, and its queue may hold
        thousands of jobs); the running jobs, bounded by the machine, summed in C."""
        running = queue.running
        procs = list(map(_FIRST, running))
        left = map(max, map(_SECOND, running), repeat(0.0))
        return cls(len(queue.queued), len(running), queued_work, sum(procs),
                   sum(map(mul, procs, left)))


def late_features(procs: int, time_limit: float, load: QueueLoad,
                  walltime_projection: float | None, median: float, bound: float,
                  class_if_late: float | None, clock: tuple[int, int] | None) -> Features:
    """A job's features at submit, in the order of LATE_FEATURES (UNKNOWN: not known);
    `clock` is (hour, weekday) at the site."""
    hour, weekday = clock if clock is not None else (UNKNOWN, UNKNOWN)
    return (float(procs), time_limit,
            float(load.queued), float(load.running), load.queued_work, float(load.busy),
            load.running_left,
            UNKNOWN if walltime_projection is None else walltime_projection,
            median, bound, UNKNOWN if class_if_late is None else class_if_late,
            float(hour), float(weekday))


def named_features(named: Mapping[str, float] | None) -> Features | None:
    """Features recorded by name (a stored decision) in LATE_FEATURES order; None when
    any is missing (none recorded, or another feature set)."""
    if named is None or any(name not in named for name in LATE_FEATURES):
        return None
    return tuple(float(named[name]) for name in LATE_FEATURES)


@dataclass(slots=True)
class _Site:
    rows: deque[tuple[Hashable, Features, float]] = field(default_factory=deque)
    keys: set[Hashable] = field(default_factory=set)
    added: int = 0  # late waits ever added
    model: BoostedTrees | None = None
    fitted_added: int = 0
    fitted_at: float = 0.0


class LateWaits:
    """Per site, the late waits known and the model fitted on them; safe to share between
    threads (production's serves the API's estimates and the worker's passes)."""

    def __init__(self, window: int = WINDOW, minimum: int = MINIMUM, refit: int = REFIT,
                 refit_after: float = REFIT_AFTER, tolerance: float = TOLERANCE) -> None:
        self.window = window
        self.minimum = minimum
        self.refit = refit
        self.refit_after = refit_after
        self.tolerance = tolerance
        self._sites: dict[str, _Site] = {}
        self._lock = Lock()
        self.fits = 0

    def observe(self, site: str, key: Hashable, features: Features, wait: float) -> None:
        """A job started at `site` after `wait` seconds, with `features` at its submit
        (kept if it was late; a key seen before is ignored while its row is in the
        window, as long as the starts production reads per pass)."""
        if wait <= self.tolerance:
            return
        with self._lock:
            known = self._sites.setdefault(site, _Site())
            if key in known.keys:
                return
            known.keys.add(key)
            known.rows.append((key, features, math.log1p(wait)))
            known.added += 1
            if len(known.rows) > self.window:
                known.keys.discard(known.rows.popleft()[0])

    def predict(self, site: str, features: Features, now: float | None) -> float | None:
        """The median wait (seconds) of a job with `features` at `site` if it has not
        started within the tolerance; None before the site's first fit. `now` (seconds
        of the site's clock; None: unknown, refits then wait on counts alone) decides
        whether a refit is due."""
        with self._lock:
            known = self._sites.get(site)
            if known is None:
                return None
            due = len(known.rows) >= self.minimum and (
                known.model is None or (known.added - known.fitted_added >= self.refit
                                        and (now is None
                                             or now - known.fitted_at >= self.refit_after)))
            if due:
                known.model = fit_boosted_trees([row[1] for row in known.rows],
                                                [row[2] for row in known.rows])
                known.fitted_added, known.fitted_at = known.added, now or 0.0
                self.fits += 1
            model = known.model
        if model is None:
            return None
        # Never under the tolerance: the job is late by definition.
        return max(math.expm1(model.predict(features)), self.tolerance)
