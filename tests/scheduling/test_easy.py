"""EASY backfilling: golden schedules worked out by hand (each case's reasoning in comments)."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.queues.easy import EasyMachine, SimJob, project, project_runs, replay


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


def _easy_by_the_rules(processors: int, running: list[tuple[int, float, float]],
                       queued: list[tuple[int, float, float]]) -> list[float | None]:
    """EASY written out plainly, slow and without the engine's shortcuts: the definition
    the engine is checked against. Running: (procs, estimated end, end); queued: (procs,
    estimate, run time). A running job's order among equal estimated ends is the order it
    was added or started in (it decides which job's processors cross the head's need)."""
    order = 0
    live: list[tuple[float, int, int, float]] = []  # (estimated end, order, procs, end)
    for procs, estimate, remaining in running:
        order += 1
        live.append((max(estimate, 0.0), order, min(procs, processors), max(remaining, 0.0)))
    waiting = [(key, min(max(procs, 1), processors), estimate, run)
               for key, (procs, estimate, run) in enumerate(queued)]
    starts: list[float | None] = [None] * len(queued)
    now = 0.0

    def start(job: tuple[int, int, float, float]) -> None:
        nonlocal order
        order += 1
        key, procs, estimate, run = job
        live.append((now + estimate, order, procs, now + run))
        starts[key] = now
        waiting.remove(job)

    while waiting:
        free = processors - sum(procs for _, _, procs, _ in live)
        while waiting and waiting[0][1] <= free:
            free -= waiting[0][1]
            start(waiting[0])
        if len(waiting) > 1 and free > 0:
            available = free
            for estimated_end, _, procs, _ in sorted(live):
                available += procs
                if available >= waiting[0][1]:
                    shadow, extra = max(estimated_end, now), available - waiting[0][1]
                    break
            for job in list(waiting[1:]):
                if free == 0:
                    break
                if job[1] > free:
                    continue
                if now + job[2] <= shadow:
                    free -= job[1]
                    start(job)
                elif job[1] <= extra:
                    extra -= job[1]
                    free -= job[1]
                    start(job)
        if not waiting or not live:
            break
        now = min(end for _, _, _, end in live)
        live = [entry for entry in live if entry[3] != now]
    return starts


@pytest.mark.parametrize("seed", range(300))
def test_projection_follows_the_rules_on_random_snapshots(seed: int) -> None:
    # The engine keeps its queue, running set and free count in shortcuts of its own (it is
    # the hot loop of every forecast); on any snapshot it must start every job exactly when
    # the rules written out plainly do, a snapshot running more than the machine included.
    rng = random.Random(seed)
    processors = rng.choice([4, 16, 128])
    sizes = [1, 1, 1, 2, 3, 4, 8, 16, 64, 200]
    running = [(rng.choice(sizes), rng.choice([0.0, -5.0, 60.0, 600.0, 3600.0]),
                rng.choice([0.0, 30.0, 600.0, 1800.0, 7200.0]))
               for _ in range(rng.randrange(0, 12))]
    queued = []
    for _ in range(rng.randrange(0, 40)):
        # Long estimates beside short ones: backfilling before the shadow and into the
        # head's extra processors both happen.
        estimate = float(rng.choice([60, 600, 600, 3600, 7200, 36000, 360000]))
        queued.append((rng.choice(sizes), estimate, estimate * rng.choice([0.1, 0.5, 1.0])))
    assert project_runs(processors, running, queued) == \
        _easy_by_the_rules(processors, running, queued)
