"""Free-processor profiles of a site's queue: golden values worked out by hand."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.queues.queue_profile import QueueProfile
from gateway.scheduling.queues.queue_state import QueueState

# 10 processors. A (6) runs, predicted 100 s more, limit 200 s. Queued: B (8 procs,
# predicted 50, limit 100), then C (2 procs, predicted 30, limit 40).
# EASY decides with limits: B waits (4 free); its shadow is A's limit end 200 with
# 10 - 8 = 2 extra; C fits the 4 free and its limit ends at 40 <= 200: backfilled at 0.
# With predicted run times, C ends at 30, A at 100, when B starts (to 150).
STATE = QueueState(10, running=((6, 100.0, 200.0),), queued=((8, 50.0, 100.0), (2, 30.0, 40.0)))


def test_profile_of_a_projected_queue() -> None:
    profile = QueueProfile.project(STATE)
    # 0: 10-6-2 = 2; 30: C ends, 4; 100: A ends and B starts, 2; 150: B ends, all 10.
    assert profile.steps() == [(0.0, 2), (30.0, 4), (100.0, 2), (150.0, 10)]
    assert profile.free_at(29.9) == 2
    assert profile.free_at(30.0) == 4
    assert profile.free_at(1e9) == 10


def test_limits_as_runtimes_give_the_pessimistic_profile() -> None:
    # Every job runs to its limit: C 0-40, A 0-200, then B 200-300.
    profile = QueueProfile.project(STATE, limits_as_runtimes=True)
    assert profile.steps() == [(0.0, 2), (40.0, 4), (200.0, 2), (300.0, 10)]


def test_earliest_start_fills_holes_without_delaying_placed_jobs() -> None:
    profile = QueueProfile.project(STATE)
    assert profile.earliest_start(2, 500) == 0.0  # 2 stay free throughout
    assert profile.earliest_start(4, 50) == 30.0  # the 30-100 hole holds 50 s
    assert profile.earliest_start(4, 70) == 30.0  # ... exactly 70 s
    assert profile.earliest_start(4, 71) == 150.0  # one second more would delay B
    assert profile.earliest_start(10, 1) == 150.0
    assert profile.earliest_start(3, 0) == 30.0


def test_reserve_is_seen_by_the_next_query() -> None:
    profile = QueueProfile.project(STATE)
    start = profile.earliest_start(4, 50)
    profile.reserve(4, start, 50)
    # 30-80 now holds the new job's 4: free 0; 80-100 back to 4.
    assert profile.steps() == [(0.0, 2), (30.0, 0), (80.0, 4), (100.0, 2), (150.0, 10)]
    assert profile.earliest_start(4, 50) == 150.0
    assert profile.earliest_start(3, 20) == 80.0
    assert profile.earliest_start(3, 21) == 150.0


def test_running_job_past_its_prediction_runs_to_its_limit() -> None:
    profile = QueueProfile.project(QueueState(8, running=((4, -10.0, 60.0),)))
    assert profile.steps() == [(0.0, 4), (60.0, 8)]


def test_prediction_over_the_limit_is_cut_at_the_limit() -> None:
    profile = QueueProfile.project(QueueState(8, queued=((8, 500.0, 100.0),)))
    assert profile.steps() == [(0.0, 0), (100.0, 8)]


def test_empty_site_and_bad_sizes() -> None:
    profile = QueueProfile(4)
    assert profile.steps() == [(0.0, 4)]
    assert profile.earliest_start(4, 3600) == 0.0
    with pytest.raises(ValueError, match="1 to 4 processors"):
        profile.earliest_start(5, 10)
    with pytest.raises(ValueError, match="at least one processor"):
        QueueProfile(0)


class _FlatProfile:
    """Reference: the same rules on one flat list, checked step by step."""

    def __init__(self, processors: int) -> None:
        self.points: dict[float, int] = {0.0: processors}

    def level_at(self, instant: float) -> int:
        return self.points[max(t for t in self.points if t <= instant)]

    def free_over(self, start: float, end: float) -> int:
        inside = [f for t, f in self.points.items() if start < t < end]
        return min([self.level_at(start), *inside])

    def earliest_start(self, procs: int, runtime: float) -> float:
        for t in sorted(self.points):
            if self.free_over(t, t + runtime) >= procs and self.points[t] >= procs:
                return t
        raise AssertionError("unreachable")

    def reserve(self, procs: int, start: float, runtime: float) -> None:
        end = start + runtime
        for instant in (start, end):
            if instant not in self.points:
                self.points[instant] = self.level_at(instant)
        for t in self.points:
            if start <= t < end:
                self.points[t] -= procs


@pytest.mark.parametrize("seed", [12, 13, 14])
def test_many_reservations_match_a_flat_reference(seed: int) -> None:
    # Enough reservations to split the blocks many times over, on top of a queue's
    # busy intervals; integer times keep the reference's comparisons exact.
    rng = random.Random(seed)
    busy = [(float(s), float(s + rng.randint(1, 300)), rng.randint(1, 6))
            for s in (rng.randint(0, 200) for _ in range(8))]
    fast, slow = QueueProfile(16, busy), _FlatProfile(16)
    for start, end, procs in busy:
        slow.reserve(procs, start, end - start)
    for _ in range(400):
        procs, runtime = rng.randint(1, 16), float(rng.randint(0, 80))
        start = fast.earliest_start(procs, runtime)
        assert start == slow.earliest_start(procs, runtime)
        fast.reserve(procs, start, runtime)
        slow.reserve(procs, start, runtime)
    assert _changes(fast.steps()) == _changes(sorted(slow.points.items()))
    assert len(fast.steps()) > 300  # the blocks did split


def _changes(steps: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """Steps with repeated levels merged (the two keep different redundant breakpoints)."""
    merged: list[tuple[float, int]] = []
    for t, f in steps:
        if not merged or merged[-1][1] != f:
            merged.append((t, f))
    return merged


def test_the_schedulers_plan_places_a_queued_job() -> None:
    # The scheduler plans B at 120 (its priorities; the projection said 100). C keeps its
    # projected start. 0: 2 free; 30: C ends, 4; 100: A ends, 10; 120-170: B, 2.
    planned = QueueState(STATE.processors, STATE.running, STATE.queued, planned=(120.0, None))
    profile = QueueProfile.project(planned)
    assert profile.steps() == [(0.0, 2), (30.0, 4), (100.0, 10), (120.0, 2), (170.0, 10)]
    assert profile.earliest_start(10, 20) == 100.0
    assert profile.earliest_start(10, 21) == 170.0
    with pytest.raises(ValueError, match="1 planned starts for 2 queued jobs"):
        QueueState(10, queued=STATE.queued, planned=(5.0,))


def test_queue_states_refuse_what_cannot_be_projected() -> None:
    with pytest.raises(ValueError, match="time limit must be finite"):
        QueueState(10, queued=((2, 60.0, float("inf")),))
    with pytest.raises(ValueError, match="time limit must be finite"):
        QueueState(10, running=((2, float("nan"), 60.0),))
    with pytest.raises(ValueError, match="at least one processor"):
        QueueState(0)


@pytest.mark.parametrize("seed", range(20))
def test_an_advanced_profile_is_the_profile_of_its_queue_that_much_later(seed: int) -> None:
    # A queue as a scheduler leaves it (no queued job fits the processors free now), and
    # nothing happens for `later` seconds (no running job reaches its predicted end):
    # advancing the old profile answers as a profile built anew then would.
    rng = random.Random(seed)
    processors = rng.choice((8, 64, 512))
    later = rng.uniform(1.0, 500.0)
    running = []
    busy = 0
    while busy < processors // 2:
        procs = rng.randint(1, processors - busy)
        ran = rng.uniform(later + 1, 5000.0)
        running.append((procs, ran, ran + rng.uniform(0.0, 3000.0)))
        busy += procs
    queued = tuple((rng.randint(processors - busy + 1, processors), rng.uniform(10.0, 3000.0),
                    4000.0) for _ in range(rng.randint(0, 30)) if busy < processors)
    state = QueueState(processors, tuple(running), queued)
    shifted = QueueState(processors, tuple((p, pred - later, limit - later)
                                           for p, pred, limit in running), queued)
    for limits in (False, True):
        old = QueueProfile.project(state, limits_as_runtimes=limits)
        old.earliest_start(1, 60.0)  # answers cached before the move stay lower bounds
        old.advance(later)
        new = QueueProfile.project(shifted, limits_as_runtimes=limits)
        assert [(pytest.approx(t), f) for t, f in old.steps()] == new.steps()
        for _ in range(20):
            procs, runtime = rng.randint(1, processors), rng.uniform(1.0, 9000.0)
            start = new.earliest_start(procs, runtime)
            assert old.earliest_start(procs, runtime) == pytest.approx(start)
            old.reserve(procs, start, runtime)
            new.reserve(procs, start, runtime)
        assert old.free_at(0.0) == new.free_at(0.0)


def test_kept_starts_are_the_walks_own() -> None:
    # Two profiles of one queue take the same reservations and advances; one keeps its
    # starts between queries, the other forgets them before each (the walk, as before
    # the starts were kept). Every answer must agree, kept or walked again.
    rng = random.Random(11)
    state = QueueState(64, running=tuple((rng.choice((1, 4, 16)), rng.uniform(1, 900),
                                          1000.0) for _ in range(10)),
                       queued=tuple((rng.choice((1, 8, 32, 64)), rng.uniform(10, 600),
                                     rng.choice((600.0, 1200.0))) for _ in range(60)))
    kept, walked = QueueProfile.project(state), QueueProfile.project(state)
    questions = [(rng.choice((1, 2, 8, 16, 32, 64)), rng.choice((30.0, 60.0, 300.0, 900.0)))
                 for _ in range(12)]
    hits = 0
    for step in range(3000):
        procs, runtime = rng.choice(questions)
        before = kept._kept.get((procs, runtime))
        start = kept.earliest_start(procs, runtime)
        hits += before is not None and kept._kept[procs, runtime][0] == before[0]
        walked._kept.clear()
        assert start == walked.earliest_start(procs, runtime), step
        if rng.random() < 0.1:
            for profile in (kept, walked):
                profile.reserve(procs, start, runtime)
        elif rng.random() < 0.01:
            later = rng.uniform(0, 50)
            for profile in (kept, walked):
                profile.advance(later)
    assert hits > 1000
