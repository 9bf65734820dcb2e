"""EASY backfilling: golden schedules worked out by hand (each case's reasoning in comments)."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.queues.easy import EasyMachine, SimJob, project, replay


def starts(jobs: list[SimJob], processors: int) -> dict[int, float]:
    return {job.key: start for job, start in replay(jobs, processors)}


def test_backfill_into_the_extra_processors() -> None:
    # 10 processors. A (6) runs 0-100. B (6) cannot start: shadow 100, extra 10-6 = 4.
    # C (4, 200 s) ends after the shadow but fits in the extra 4: backfilled at 2.
    # D (2) finds no free processor; B starts at 100 when A ends, D when B ends at 150.
    jobs = [
        SimJob(1, 0, 6, 100, 100),
        SimJob(2, 1, 6, 50, 50),
        SimJob(3, 2, 4, 200, 200),
        SimJob(4, 3, 2, 10, 10),
    ]
    assert starts(jobs, 10) == {1: 0, 2: 100, 3: 2, 4: 150}


def test_backfill_must_not_delay_the_head() -> None:
    # 10 processors. A (6) runs 0-100. B (8) waits: shadow 100, extra 10-8 = 2.
    # C (3, 500 s) fits the 4 free processors but would still run at 100 and needs more
    # than the 2 extra: refused. D (3, 50 s) ends at 53 <= 100: backfilled at 3.
    # At 100 A ends and B starts (free 2); C (3) waits for B's end at 110.
    jobs = [
        SimJob(1, 0, 6, 100, 100),
        SimJob(2, 1, 8, 10, 10),
        SimJob(3, 2, 3, 500, 500),
        SimJob(4, 3, 3, 50, 50),
    ]
    assert starts(jobs, 10) == {1: 0, 2: 100, 3: 110, 4: 3}


def test_early_completion_frees_processors_before_the_estimate() -> None:
    # As above, but A really runs 60 s of its 100 s estimate: B starts at 60, C at 70.
    jobs = [
        SimJob(1, 0, 6, 60, 100),
        SimJob(2, 1, 8, 10, 10),
        SimJob(3, 2, 3, 500, 500),
        SimJob(4, 3, 3, 50, 50),
    ]
    assert starts(jobs, 10) == {1: 0, 2: 60, 3: 70, 4: 3}


def test_fcfs_when_nothing_can_backfill() -> None:
    # 4 processors, every job needs all of them: strict arrival order, back to back.
    jobs = [SimJob(k, k, 4, 30, 30) for k in range(3)]
    assert starts(jobs, 4) == {0: 0, 1: 30, 2: 60}


def test_overrunning_job_counts_as_ending_now() -> None:
    # A (2 of 4) is estimated at 10 s but runs 100. B (4) waits for it. At 50, A is past its
    # estimate, so the shadow is "now" (50), not 10: C (2 procs, a 0 s job, like the logs'
    # cancelled entries) ends by the shadow and backfills at once; D (2 procs, 5 s) would
    # end after it with no extra processors, so it waits behind B.
    jobs = [
        SimJob(1, 0, 2, 100, 10),
        SimJob(2, 1, 4, 5, 5),
        SimJob(3, 50, 2, 0, 0),
        SimJob(4, 50, 2, 5, 5),
    ]
    assert starts(jobs, 4) == {1: 0, 2: 100, 3: 50, 4: 105}


def test_oversized_job_is_clamped_to_the_machine() -> None:
    assert starts([SimJob(1, 0, 99, 10, 10), SimJob(2, 0, 1, 10, 10)], 8) == {1: 0, 2: 10}


def test_projection_of_a_snapshot() -> None:
    # The first golden schedule seen from instant 0 with A already running 100 s more.
    running = [(6, 100.0)]
    queued = [(6, 50.0), (4, 200.0), (2, 10.0)]
    assert project(10, running, queued) == [100, 0, 150]
    # Stopping once the first queued job has started leaves the later one unprojected.
    assert project(10, running, queued, until_index=0) == [100, 0, None]


def test_projection_on_an_idle_machine_starts_what_fits_now() -> None:
    assert project(8, [], [(4, 10.0), (4, 10.0), (8, 5.0)]) == [0, 0, 10]


def test_machine_needs_processors() -> None:
    with pytest.raises(ValueError):
        EasyMachine(0)


def test_projection_agrees_with_replay_when_estimates_are_exact() -> None:
    # Seeded random workload, run times equal to estimates: projecting the queue as it stands
    # right after the last arrival must give the starts the replay gives from that instant on.
    rng = random.Random(7)
    jobs = [SimJob(k, float(k * 30), rng.choice([1, 2, 4, 8, 16]), 0.0, 0.0) for k in range(60)]
    for job in jobs:
        job.runtime = job.estimate = float(rng.randrange(60, 3600))
    processors = 16
    replayed = {job.key: start for job, start in replay(
        [SimJob(j.key, j.submit, j.procs, j.runtime, j.estimate) for j in jobs], processors)}
    now = jobs[-1].submit
    running = [(j.procs, replayed[j.key] + j.runtime - now) for j in jobs
               if replayed[j.key] <= now < replayed[j.key] + j.runtime]
    waiting = [j for j in jobs if replayed[j.key] > now]
    assert len(waiting) > 5  # the snapshot really has a queue
    projected = project(processors, running, [(j.procs, j.estimate) for j in waiting])
    assert projected == [replayed[j.key] - now for j in waiting]
