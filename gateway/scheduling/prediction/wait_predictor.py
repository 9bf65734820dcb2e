"""Queue-wait predictor: QBETS-style classes, a calibrated bound, a selected median (pure).

Waits are kept per job class (`LEVELS`, finest first): (site, user, projection class)
when the user and the live queue's projection are known, (site, projection class,
time-limit class), (site, projection class), then (site, queue, size class, time-limit
class) -> (site, queue, size class) -> (site, queue) -> (site). The projection class is
the log2 class of the job's walltime-based EASY projection at submit: the history then
says how long jobs the queue projected alike really waited (the projection alone is a
poor point, a good conditioner). Every observation feeds every class it belongs to; each
class is a sliding window with QBETS's change-point cut (`wait_history.py`).

The 95% bound. The finest class with at least `minimum` waits gives the order statistic
of rank ceil(q (n + 1)), the distribution-free bound on the *next* wait (`binomial.py`;
19 waits suffice for q = 0.95, so finer classes answer). Waits drift, so that bound alone
covers less than q (the naive rolling p95 of the traces README reaches 90-94.5%); it is
scaled, in log(1 + wait), by a per-site factor learnt from the outcomes of the bounds
given earlier (adaptive conformal inference, Gibbs and Candes, NeurIPS 2021): each
outcome moves log(factor) by step * (missed - target), so the long-run share of misses
converges to `target` whatever the drift. The target is (1 - q) * c, which leaves the
finite run a margin of (1 - q)(1 - c); the step is Gibbs and Candes's 0.005. Feed the
outcomes back with `observe(job, wait, predicted=given(<the class bound given for it>))`;
without them the factor stays 1 and the bound covers less under drift (measured: KTH
95.4%, CTC 93.6%). Scoring, at observe time, the bound the class gives then instead
(newer than the one given at submit) was measured too: KTH 94.9%, CTC 94.2%, no better.
A site-wide factor makes the site's misses 4.75% on average, not in every kind of job:
a kind that waits longer than the class its bound comes from (on SDSC-BLUE the jobs of
64-127 processors and 17-34 h limits, covered 87%) pays for the others. So each size x
time-limit class also keeps a lift of its own, moved by the same rule on its own
outcomes and never below 1 (Mondrian conformal prediction, Vovk et al.: calibrate per
category so that coverage holds within each): a class the site's factor covers keeps
it, a class it does not is raised until it is.

The median. Which class's median best says when a job starts depends on the machine
(on KTH the site-wide median is best; on CTC the projection class). Every median source
(`MEDIAN_LEVELS`: the bound's classes, the user's, the size bucket, and the last 59
waits of the user, the projection class and the site) is scored on each
observed wait, before it joins the history: a hit is a wait within `tolerance` (the
+-10 min a start prediction is judged by) of the source's current median. Scores are
kept per (site, projection class) and decay with a memory of QBETS's minimum history
(59 waits); `predict` takes the best-scored source.

The likely wait. A start prediction judged right within +-`tolerance` is best served
not by a median but by the centre of the window the wait most probably falls in
(`WaitHistory.likely`): on a log where most jobs start at once that is `tolerance`
itself, which catches the waits up to twice it. Every median source also offers its
likely wait, scored and chosen the same way (hits within `tolerance`, scores of their
own); the median stays what routing ranks by, the likely wait is what a person is told.

The wait if late. Most jobs of most machines start within minutes, so a single point
that is right for them (the median, the likely wait) is far off for the jobs that do
wait: the forecast also says how long a job waits if it has not started within
`tolerance`, the median of the waits longer than that in the bound's class (the
finest with enough history; the next coarser one that has seen such a wait when it has
not): the second part of a two-part (hurdle) forecast, judged on the jobs that waited
longer than `tolerance`. No score chooses its class, so nothing is fitted to a log.

The spread. The chance of starting within a time (the first part of that forecast, and
what the deadline policy ranks by) is read from the bound's class at each decile: the
prediction bound of that level (rank ceil(p (n + 1)), as the bound's own), calibrated
like the bound. Two points (median and bound) with a straight line between them gave
probabilities worse than a rolling window's share on three of the four shared logs.

The target miss rate (1 - q) * c is derived from the method (the bound's confidence),
and the median's source is chosen by +-10 min hits because routing measured best that
way (scored by relative error instead, the four-log federation's slowdown went from
11.9 to 16.1); neither was fitted to a log's prediction scores. Measured on the four
shared logs through production's forecaster: docs/design/predictors.md
(benchmarks/predictor_evaluation.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.scheduling.prediction.binomial import minimum_history, minimum_prediction_history
from gateway.scheduling.prediction.wait_history import WaitHistory

DEFAULT_QUANTILE = 0.95
DEFAULT_CONFIDENCE = 0.95
DEFAULT_TOLERANCE = 600.0
# Gibbs and Candes's step for the calibration, used in all their experiments.
CALIBRATION_STEP = 0.005
LEVELS = (
    "site/user/projection",
    "site/projection/limit",
    "site/projection",
    "site/queue/size/limit",
    "site/queue/size",
    "site/queue",
    "site",
)
# The probabilities of the spread's points: the deciles below the bound's quantile.
SPREAD = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
# Median sources: every bound class, the user's, the size bucket of the naive baseline,
# and short windows (QBETS's minimum history) that follow a changing queue faster.
RECENT_LEVELS = ("recent site/user", "recent site/projection", "recent site")
MEDIAN_LEVELS = (*LEVELS, "site/user", "site/size", *RECENT_LEVELS)


def rank_margin_capacity(quantile: float, confidence: float) -> int:
    """Window size at which the bound's rank margin is a quarter of 1 - quantile."""
    z = _normal_quantile(confidence)
    return math.ceil(quantile * (1.0 - quantile) * (4.0 * z / (1.0 - quantile)) ** 2)


def _normal_quantile(p: float) -> float:
    # Inverse of the standard normal CDF by bisection on math.erf (no scipy here).
    low, high = -10.0, 10.0
    for _ in range(100):
        middle = (low + high) / 2.0
        if 0.5 * (1.0 + math.erf(middle / math.sqrt(2.0))) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def size_class(procs: int) -> int:
    """floor(log2(processors)); 0 for one processor (and for unknown counts)."""
    return max(procs, 1).bit_length() - 1


def limit_class(seconds: float | None) -> int:
    """floor(log2(time limit in minutes)), -1 when the limit is unknown."""
    if seconds is None or seconds <= 0:
        return -1
    return max(int(seconds // 60), 1).bit_length() - 1


def wait_class(seconds: float | None) -> int:
    """Class of a projected wait: 0 under a minute, then 1 + floor(log2(minutes)); -1 unknown."""
    if seconds is None:
        return -1
    return 0 if seconds < 60 else int(seconds // 60).bit_length()


@dataclass(frozen=True, slots=True)
class JobClass:
    """What the predictor knows of a job before it starts.

    `projected_wait` is the live queue's EASY projection for the job at that instant
    (None without a snapshot): waits are then also kept per projection class, so the
    history says how long jobs *that the queue projected alike* really waited. `user`
    (None when unknown) adds the per-user classes: schedulers with fair share make a
    user's recent waits a good guide to the next.
    """

    site: str
    queue: str
    procs: int
    time_limit: float | None
    projected_wait: float | None = None
    user: str | None = None


@dataclass(frozen=True, slots=True)
class WaitPrediction:
    """Median and upper bound of the wait (seconds), and which histories gave them.

    `level`/`history`: the class of the bound and its number of waits; `median_level`:
    the class whose median was chosen (see the module docstring).
    """

    median: float
    upper_bound: float
    quantile: float
    confidence: float
    level: str
    history: int
    median_level: str = ""
    likely: float | None = None  # the likely wait (module docstring); None: not known
    # The wait if the job has not started within `tolerance` (module docstring); None:
    # no class has seen a wait that long.
    if_late: float | None = None
    # (probability, wait) points of the bound's class, calibrated like the bound: what
    # P(start within t) is read from (module docstring).
    spread: tuple[tuple[float, float], ...] = ()


Key = tuple[object, ...]


def _keys(job: JobClass) -> dict[str, Key | None]:
    size = size_class(job.procs)
    projection = wait_class(job.projected_wait)
    known = projection >= 0
    user = job.user
    # The level name leads each key, so classes of different levels never collide.
    return {
        "site/user/projection": ("u/p", job.site, user, projection)
        if known and user is not None else None,
        "site/projection/limit": ("p/l", job.site, projection, limit_class(job.time_limit))
        if known else None,
        "site/projection": ("p", job.site, projection) if known else None,
        "site/queue/size/limit": ("qsl", job.site, job.queue, size, limit_class(job.time_limit)),
        "site/queue/size": ("qs", job.site, job.queue, size),
        "site/queue": ("q", job.site, job.queue),
        "site": ("s", job.site),
        "site/user": ("u", job.site, user) if user is not None else None,
        "site/size": ("z", job.site, size),
        "recent site/user": ("r/u", job.site, user) if user is not None else None,
        "recent site/projection": ("r/p", job.site, projection) if known else None,
        "recent site": ("r/s", job.site),
    }


def _size_and_limit(job: JobClass) -> tuple[str, int, int]:
    return job.site, size_class(job.procs), limit_class(job.time_limit)


class WaitPredictor:
    """Incremental per-class wait histories; `observe` waits as jobs start, `predict` any time."""

    def __init__(
        self,
        quantile: float = DEFAULT_QUANTILE,
        confidence: float = DEFAULT_CONFIDENCE,
        capacity: int | None = None,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> None:
        self.quantile = quantile
        self.confidence = confidence
        self.capacity = capacity if capacity is not None else rank_margin_capacity(
            quantile, confidence
        )
        self.tolerance = tolerance
        self.minimum = minimum_prediction_history(quantile)
        self.target_miss = (1.0 - quantile) * confidence
        self.recent = minimum_history(quantile, confidence)
        self.decay = 1.0 - 1.0 / self.recent
        self._histories: dict[Key, WaitHistory] = {}
        self._log_scale: dict[str, float] = {}
        self._lifts: dict[tuple[str, int, int], float] = {}  # log, per size x limit class
        self._scores: dict[tuple[str, int, str], float] = {}
        self._likely_scores: dict[tuple[str, int, str], float] = {}

    def given(self, bound: float | None) -> WaitPrediction | None:
        """The class bound a forecast gave (`Forecast.class_bound`; None: none) as
        `observe(..., predicted=)` takes it: what production, the simulator and the
        evaluation all give back, so the bounds are calibrated alike."""
        if bound is None:
            return None
        return WaitPrediction(bound, bound, self.quantile, self.confidence, "given", 0)

    def observe(self, job: JobClass, wait: float, predicted: WaitPrediction | None = None) -> None:
        """Record the wait of a job that has started; `predicted`: what was predicted for it."""
        wait = max(wait, 0.0)
        keys = _keys(job)
        self._score_medians(job, keys, wait)
        if predicted is not None:
            missed = wait > predicted.upper_bound
            step = CALIBRATION_STEP * (missed - self.target_miss)
            self._log_scale[job.site] = self._log_scale.get(job.site, 0.0) + step
            where = _size_and_limit(job)
            self._lifts[where] = max(self._lifts.get(where, 0.0) + step, 0.0)
        for level, key in keys.items():
            if key is None:
                continue
            history = self._histories.get(key)
            if history is None:
                capacity = self.recent if level in RECENT_LEVELS else self.capacity
                history = WaitHistory(capacity, self.quantile, self.confidence)
                self._histories[key] = history
            history.add(wait)

    def _answering(self, key: Key | None) -> WaitHistory | None:
        history = self._histories.get(key) if key is not None else None
        return history if history is not None and len(history) >= self.minimum else None

    def _score_medians(self, job: JobClass, keys: dict[str, Key | None], wait: float) -> None:
        context = (job.site, wait_class(job.projected_wait))
        for level in MEDIAN_LEVELS:
            history = self._answering(keys[level])
            if history is None:
                continue
            score_key = (*context, level)
            for scores, point in ((self._scores, history.median()),
                                  (self._likely_scores, history.likely(self.tolerance))):
                hit = point is not None and abs(wait - point) <= self.tolerance
                scores[score_key] = scores.get(score_key, 0.0) * self.decay + hit

    def _bound_history(self, keys: dict[str, Key | None]) -> tuple[str, WaitHistory] | None:
        for level in LEVELS:
            history = self._answering(keys[level])
            if history is not None:
                return level, history
        return None

    def _sources(self, job: JobClass, keys: dict[str, Key | None]
                 ) -> tuple[str, WaitHistory, WaitHistory] | None:
        """(level, history) of the best-scored median source and the history of the
        best-scored likely-wait source (finest first: ties keep the finer class). One
        pass over the sources; only the winners' points are read."""
        context = (job.site, wait_class(job.projected_wait))
        median: tuple[float, str, WaitHistory] | None = None
        likely: tuple[float, WaitHistory] | None = None
        for level in MEDIAN_LEVELS:
            history = self._answering(keys[level])
            if history is None:
                continue
            score_key = (*context, level)
            score = self._scores.get(score_key, 0.0)
            if median is None or score > median[0]:
                median = (score, level, history)
            score = self._likely_scores.get(score_key, 0.0)
            if likely is None or score > likely[0]:
                likely = (score, history)
        if median is None or likely is None:
            return None
        return median[1], median[2], likely[1]

    def prediction_key(self, job: JobClass) -> Key:
        """All that `predict` reads of a job: its classes, not its raw projection, and its
        user only where the site holds waits of theirs (every observation with a user
        feeds the site/user class, and histories are never dropped). Jobs with equal
        keys get equal predictions until the next `observe`."""
        user = job.user if ("u", job.site, job.user) in self._histories else None
        return (job.site, job.queue, size_class(job.procs), limit_class(job.time_limit),
                wait_class(job.projected_wait), user)

    def lift(self, job: JobClass) -> float:
        """The job's size x time-limit class's own factor on top of the site's (>= 1)."""
        return math.exp(self._lifts.get(_size_and_limit(job), 0.0))

    def scale(self, site: str) -> float:
        """The site's calibration factor on 1 + wait (1 until outcomes are fed back)."""
        return math.exp(self._log_scale.get(site, 0.0))

    def predict(self, job: JobClass) -> WaitPrediction | None:
        """Median and calibrated bound from the finest classes with enough history; else None."""
        keys = _keys(job)
        found = self._bound_history(keys)
        if found is None:
            return None
        level, history = found
        raw = history.prediction_bound(self.quantile)
        sources = self._sources(job, keys)
        assert raw is not None and sources is not None  # the bound's class answers
        median_level, median_history, likely_history = sources
        median = median_history.median()
        likely = likely_history.likely(self.tolerance)
        assert median is not None and likely is not None  # answering histories hold waits
        scale = self.scale(job.site) * self.lift(job)
        bound = max((1.0 + raw) * scale - 1.0, median, 0.0)
        spread = history.spread(SPREAD)
        if scale != 1.0:
            spread = tuple((p, max((1.0 + wait) * scale - 1.0, 0.0)) for p, wait in spread)
        return WaitPrediction(median, bound, self.quantile, self.confidence, level,
                              len(history), median_level, likely, self._if_late(keys, level),
                              spread)

    def _if_late(self, keys: dict[str, Key | None], level: str) -> float | None:
        """The median of the waits over `tolerance` in the bound's class, or in the next
        coarser class that has any (module docstring)."""
        for coarser in LEVELS[LEVELS.index(level):]:
            history = self._answering(keys[coarser])
            late = history.median_above(self.tolerance) if history is not None else None
            if late is not None:
                return late
        return None

    def probability_by(self, job: JobClass, seconds: float) -> float | None:
        """P(the job starts within `seconds` of now), from the bound's history, scale and
        lift."""
        found = self._bound_history(_keys(job))
        if found is None:
            return None
        unscaled = (1.0 + seconds) / (self.scale(job.site) * self.lift(job)) - 1.0
        return found[1].probability_by(unscaled)

    def change_points(self) -> int:
        """Change points detected so far over all histories (for reports)."""
        return sum(history.change_points for history in self._histories.values())
