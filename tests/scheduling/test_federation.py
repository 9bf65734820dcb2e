"""Federation simulator: golden schedules worked out by hand on three tiny hand-written logs
(tests/scheduling/data/federation_{a,b,c}.swf; C has no header, so its size is its largest
allocation), one per policy, and the engine's bookkeeping. A log's jobs count from its
first record: C's is job 0, submitted at 0 and cancelled before it ran (skipped), so C1
keeps its submit time 15.

Sites: A 4 processors, B 8, C 2 (headerless). Jobs (submit, processors, run, request):
  A1 0 4p 100/100   A2 10 2p 50/60   A3 20 4p 30/40   A4 30 1p 10/10
  B1 0 8p 200/300   B2 5 2p 20/20    B3 35 8p 10/10
  C1 15 2p 40/50
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from gateway.scheduling.evaluation.federation.baselines import FewestQueued, Own
from gateway.scheduling.evaluation.federation.engine import (
    Federation,
    Policy,
    Record,
    SimResult,
    SiteSpec,
    SiteView,
    TraceJob,
    Truth,
)
from gateway.scheduling.evaluation.federation.metrics import against_log, summarize
from gateway.scheduling.evaluation.federation.production_router import Fastest
from gateway.scheduling.evaluation.federation.trace import merged_records, open_logs
from gateway.scheduling.prediction.wait_predictor import JobClass
from gateway.scheduling.queues.easy import SimJob, replay

DATA = Path(__file__).parent / "data"
LOGS = [DATA / "federation_a.swf", DATA / "federation_b.swf", DATA / "federation_c.swf"]


def simulate(policy: Policy, paths: Sequence[Path] = LOGS) -> SimResult:
    logs = open_logs(paths)
    return Federation([log.spec for log in logs], policy).run(merged_records(logs))


def schedule(result: SimResult) -> dict[str, tuple[str, float]]:
    """'A2' -> (site it ran at, its wait)."""
    names = [spec.name[-1].upper() for spec in result.sites]
    return {f"{names[job.origin]}{job.number}": (names[site], start - job.submit)
            for job, site, start in zip(result.jobs, result.site, result.start, strict=True)}


def test_sites_come_from_the_headers_or_the_largest_allocation() -> None:
    assert [log.spec for log in open_logs(LOGS)] == [
        SiteSpec("federation_a", 4), SiteSpec("federation_b", 8), SiteSpec("federation_c", 2)]


def test_own_golden_schedule() -> None:
    # A: A1 runs 0-100. A2 (2p) queues at 10 (shadow 100, extra 2); A3 (4p) and A4 (1p)
    # find no free processor. At 100 A2 starts; head A3 needs 4: shadow = A2's estimated
    # end 160, extra 0; A4 (ends by 110 <= 160) backfills at 100. A2 really ends at 150:
    # A3 starts then. Waits A1 0, A2 90, A3 130, A4 70.
    # B: B1 runs 0-200 (estimate 300). B2 and B3 wait; at 200 B2 starts, B3 (8p) waits
    # for B2's end at 220. Waits B1 0, B2 195, B3 185. C: C1 starts at once.
    assert schedule(simulate(Own())) == {
        "A1": ("A", 0), "A2": ("A", 90), "A3": ("A", 130), "A4": ("A", 70),
        "B1": ("B", 0), "B2": ("B", 195), "B3": ("B", 185), "C1": ("C", 0)}


def test_fewest_queued_golden_schedule() -> None:
    # Queue lengths when each job arrives (A, B, C), ties kept at the origin:
    # 0: A1 (0,0,0) stays; B1 fits only B. 5: B2 (0,0,0) stays, queues behind B1.
    # 10: A2 (2p fits all three) (0,1,0): A and C tie, the origin wins -> A.
    # 15: C1 (1,1,0) -> C, idle: starts at once.
    # 20: A3 (4p: A or B) (1,1,-) -> tie, origin A. 30: A4 (2,1,0) -> C, where C1 holds
    #     both processors until 55: A4 starts at 55 (wait 25).
    # 35: B3 fits only B. A and B then run as under `own`, without A4 at A: A3 still
    # waits for A2's end at 150.
    assert schedule(simulate(FewestQueued())) == {
        "A1": ("A", 0), "A2": ("A", 90), "A3": ("A", 130), "A4": ("C", 25),
        "B1": ("B", 0), "B2": ("B", 195), "B3": ("B", 185), "C1": ("C", 0)}


def test_figures_of_the_own_schedule() -> None:
    summary = summarize(simulate(Own()), "own")
    waits = [0, 90, 130, 70, 0, 195, 185, 0]
    runs = [100, 50, 30, 10, 200, 20, 10, 40]
    slowdowns = [max(1.0, (w + r) / max(r, 10)) for w, r in zip(waits, runs, strict=True)]
    overall = summary["overall"]
    assert overall["jobs"] == 8
    assert overall["mean_wait_s"] == 83.75
    assert overall["p95_wait_s"] == 195  # nearest rank: ceil(0.95 * 8) = 8th of 8
    assert overall["mean_turnaround_s"] == 141.25
    assert overall["mean_bounded_slowdown"] == round(sum(slowdowns) / 8, 3) == 6.173
    # Processor-seconds 630 (A) + 1720 (B) + 80 (C) over 14 processors x 230 s (B3 ends last).
    assert summary["utilisation"] == round(2430 / (14 * 230), 4)
    assert summary["sites"]["federation_b"] == {"processors": 8, "jobs_run": 3,
                                                "utilisation": round(1720 / (8 * 230), 4)}
    assert summary["origins"]["federation_a"]["mean_wait_s"] == 72.5
    assert summary["origins"]["federation_a"]["ran_elsewhere"] == 0.0


def test_per_origin_figures_follow_jobs_that_moved() -> None:
    origins = summarize(simulate(FewestQueued()), "fewest-queued")["origins"]
    assert origins["federation_a"]["mean_wait_s"] == (0 + 90 + 130 + 25) / 4
    assert origins["federation_a"]["ran_elsewhere"] == 0.25
    assert origins["federation_c"]["jobs"] == 1


def test_a_single_log_replays_as_the_easy_engine_does() -> None:
    # One site under `own` must give exactly the EASY engine's schedule of the same log.
    log = DATA / "synthetic.swf"
    result = simulate(Own(), [log])
    jobs = [SimJob(k, job.submit, job.procs, truth.runtime, job.requested)
            for k, (job, truth) in enumerate(zip(result.jobs, result.truths, strict=True))]
    expected = {sim.key: start for sim, start in replay(jobs, 64)}
    assert dict(enumerate(result.start)) == expected
    # Job 9's requested time is unknown: the longest request seen before it (9000 s) stands in.
    assert next(job.requested for job in result.jobs if job.number == 9) == 9000
    comparison = against_log(result)
    assert comparison["jobs"] == 12
    assert comparison["mean_wait_logged_s"] == round(sum(
        [0, 0, 1680, 0, 0, 60, 600, 30, 100, 5000, 20, 400]) / 12, 1)


class Recorder(Own):
    """`own`, checking at every decision that it was told exactly what had happened."""

    def __init__(self, runtimes: dict[tuple[int, int], float]) -> None:
        self.runtimes = runtimes
        self.starts: dict[tuple[int, int], float] = {}
        self.ends: dict[tuple[int, int], float] = {}
        self.decisions = 0

    def route(self, now: float, jobs: Sequence[TraceJob], sites: Sequence[SiteView]
              ) -> list[int]:
        self.decisions += 1
        assert all(not hasattr(job, "runtime") for job in jobs)
        for key, start in self.starts.items():
            finished = start + self.runtimes[key] <= now
            assert (key in self.ends) == finished
        assert all(start <= now for start in self.starts.values())
        running = {(job.origin, job.number) for site in sites for job, _ in site.running()}
        queued = {(job.origin, job.number) for site in sites for job in site.queued()}
        assert running == set(self.starts) - set(self.ends)
        assert not queued & set(self.starts)
        return super().route(now, jobs, sites)

    def started(self, job: TraceJob, site: int, start: float) -> None:
        self.starts[job.origin, job.number] = start

    def ended(self, job: TraceJob, site: int, start: float, end: float) -> None:
        assert end == start + self.runtimes[job.origin, job.number]
        self.ends[job.origin, job.number] = end


def test_policies_learn_starts_and_ends_only_once_they_happened() -> None:
    logs = open_logs(LOGS)
    runtimes = {(job.origin, job.number): truth.runtime for job, truth in merged_records(logs)}
    recorder = Recorder(runtimes)
    simulate(recorder)
    assert recorder.decisions == 7  # A1 and B1 arrive together, at 0
    assert len(recorder.starts) == 8


def test_jobs_arriving_together_are_routed_in_one_pass() -> None:
    jobs = [(TraceJob(0, n, 0.0, 1, 10.0, 1, 1), Truth(10.0, -1.0)) for n in range(3)]
    calls: list[int] = []

    class Counting(Own):
        def route(self, now: float, batch: Sequence[TraceJob], sites: Sequence[SiteView]
                  ) -> list[int]:
            calls.append(len(batch))
            return super().route(now, batch, sites)

    Federation([SiteSpec("x", 1)], Counting()).run(jobs)
    assert calls == [3]


def test_jobs_out_of_submit_order_are_refused() -> None:
    jobs = [(TraceJob(0, 1, 50.0, 1, 10.0, 1, 1), Truth(10.0, -1.0)),
            (TraceJob(0, 2, 40.0, 1, 10.0, 1, 1), Truth(10.0, -1.0))]
    with pytest.raises(ValueError, match="submit order"):
        Federation([SiteSpec("x", 1)], Own()).run(jobs)


@pytest.mark.parametrize("policy", [Own, FewestQueued, Fastest])
def test_a_job_too_big_for_every_site_stays_home_clamped(policy: type[Policy]) -> None:
    jobs = [(TraceJob(1, 1, 0.0, 16, 10.0, 1, 1), Truth(10.0, -1.0))]
    result = Federation([SiteSpec("smaller", 2), SiteSpec("small", 4)], policy()).run(jobs)
    assert (result.site, result.procs, result.start) == ([1], [4], [0.0])


def test_fastest_golden_schedule() -> None:
    # No history yet (fewer than 59 waits), so each wait is the live queue's projection
    # with predicted run times, and with no finished runs a prediction is the request.
    # Each job's home is its log's site; a guest that would queue goes only where its
    # site's users were given as much elsewhere (the guest ledger, processor-seconds).
    # 0:  A1 (4p) A or B, both idle: home A. B1 fits only B.
    # 5:  B2 (2p, 20 s): A frees at 100, B at 300, C is idle -> C: it starts at once even
    #     if every job runs to its limit, so it is welcome. Ledger: B +40, C -40.
    # 10: A2 (2p, 60 s): at C it would queue behind B2 (15 s), and C's credit (-40) does
    #     not cover its 120 processor-seconds: C ranks behind home -> A, starts when A1
    #     ends (wait 90).
    # 15: C1 (2p, 50 s): home C, behind B2, which really ends at 25 (wait 10).
    # 20: A3 (4p, 40 s): A once A1 and A2 are done, 150 (wait 130), against B's 280 -> A.
    # 30: A4 (1p, 10 s): C would queue (C1 runs to 75 at its limit), C's credit -40 < 10
    #     -> A, beside A2 at 100 (wait 70).
    # 35: B3 fits only B: starts when B1 ends, 200.
    policy = Fastest()
    assert schedule(simulate(policy)) == {
        "A1": ("A", 0), "A2": ("A", 90), "A3": ("A", 130), "A4": ("A", 70),
        "B1": ("B", 0), "B2": ("C", 0), "B3": ("B", 165), "C1": ("C", 10)}
    assert (policy.ledger.credit("federation_b"), policy.ledger.credit("federation_c")) \
        == (40, -40)


def two_sites(first_runtime: float) -> list[Record]:
    # A1 holds all of A, requesting 1000 s; A2 arrives at 10; B1 at 20.
    return [(TraceJob(0, 1, 0.0, 4, 1000.0, 1, 1, 7), Truth(first_runtime, -1.0)),
            (TraceJob(0, 2, 10.0, 4, 100.0, 2, 1, 8), Truth(100.0, -1.0)),
            (TraceJob(1, 1, 20.0, 2, 50.0, 3, 1, 9), Truth(50.0, -1.0))]


SITES = [SiteSpec("a", 4), SiteSpec("b", 4)]


def test_the_engine_schedules_by_its_own_estimate_where_the_log_gives_one() -> None:
    # One site of 2 processors. A (1 processor) runs 0-100; B (2) comes at 1 and is
    # reserved the machine at 100; C (1, 50 s) comes at 2. The router was told 1,000 s
    # for C (a log without requests: the longest run known), the engine's scheduler
    # knows 50 s (`Truth.estimate`): C backfills at once and ends before B's
    # reservation. Scheduled by the router's 1,000 s it would wait for B, until 110.
    records = [(TraceJob(0, 1, 0.0, 1, 100.0, 1, 1), Truth(100.0, -1.0)),
               (TraceJob(0, 2, 1.0, 2, 10.0, 1, 1), Truth(10.0, -1.0)),
               (TraceJob(0, 3, 2.0, 1, 1000.0, 1, 1), Truth(50.0, -1.0, estimate=50.0))]
    result = Federation([SiteSpec("solo", 2)], Own()).run(records)
    assert result.start == [0.0, 100.0, 2.0]


def test_an_account_is_a_known_user_of_one_log() -> None:
    # Users of different logs are distinct; a log without users (-1) records no owner,
    # so the forecaster's account queues (account_queue.py) do not make one of them.
    assert TraceJob(1, 5, 0.0, 2, 60.0, 17, 1).account == "1/17"
    assert TraceJob(1, 5, 0.0, 2, 60.0, -1, 1).account is None


def test_fastest_calibrates_the_class_bounds_its_forecasts_gave() -> None:
    # One site of 4 processors. User 1's A (2 processors) runs 0-1000; user 2's B (4)
    # waits from 1, reserved the machine at 1000; user 1's C (1, limit 2000) waits from 2
    # although 2 processors are free (it would delay B): user 1 is held, so each of its
    # next jobs (1 processor, 5 s, one each 10 s from 40) backfills at once with its
    # bound raised toward C's end. The waits calibrate the bounds of the jobs' classes
    # (`Forecast.class_bound`), as production and the evaluation give them back, not the
    # raised ones: only the two jobs submitted once 19 waits were known had a class bound
    # (A's and 18 of the short jobs'), and both held, so the factor moved down twice.
    policy = Fastest()
    records = [(TraceJob(0, 1, 0.0, 2, 1000.0, 1, 1), Truth(1000.0, -1.0)),
               (TraceJob(0, 2, 1.0, 4, 100.0, 2, 1), Truth(100.0, -1.0)),
               (TraceJob(0, 3, 2.0, 1, 2000.0, 1, 1), Truth(2000.0, -1.0))]
    records += [(TraceJob(0, n, 10.0 * n, 1, 100.0, 1, 1), Truth(5.0, -1.0))
                for n in range(4, 24)]
    result = Federation([SiteSpec("solo", 4)], policy).run(records)
    assert result.start == [0.0, 1000.0, 1100.0, *(10.0 * n for n in range(4, 24))]
    assert policy.waits.scale("solo") == pytest.approx(math.exp(-2 * 0.005 * 0.0475))


def test_fastest_routes_on_what_is_known_not_on_real_run_times() -> None:
    # At 10, A1 is still running whether it really runs 1000 s or 15 s: A2 goes to idle B
    # either way (A1's request says 990 s more). Fewest-queued sees two empty queues and
    # keeps A2 at home, behind A1.
    long, short = (Federation(SITES, Fastest()).run(two_sites(runtime))
                   for runtime in (1000.0, 15.0))
    assert long.site[:2] == short.site[:2] == [0, 1]
    # At 20 the difference is known: with A1 still running, B1 queues behind A2 at B
    # (90 s left) rather than behind A1 (980 s); with A1 ended at 15, A is idle.
    assert (long.site[2], long.start[2]) == (1, 110.0)
    assert (short.site[2], short.start[2]) == (0, 20.0)
    assert Federation(SITES, FewestQueued()).run(two_sites(1000.0)).site == [0, 0, 1]


def test_fastest_learns_run_times_and_waits_as_they_happen() -> None:
    policy = Fastest()
    Federation(SITES, policy).run(two_sites(15.0))
    # A1 ended (15 s of its 1000): the user's next run of that application is 15 s.
    assert policy.runtimes.predict("0/1", "0/7", "a", 4, 1000.0).seconds == 15.0
    # Only jobs that ended before the last arrival are known: A2 (ends 110) is not.
    assert policy.runtimes.predict("0/2", "0/8", "b", 4, 100.0).basis.startswith("time limit")


def test_fastest_wait_history_takes_over_from_the_projection() -> None:
    # 70 one-processor jobs on an idle one-site federation all wait 0 s: the history
    # (59 waits make a 95% bound) then predicts 0 for the projection class of "no wait".
    policy = Fastest()
    jobs = [(TraceJob(0, n, float(n * 100), 1, 10.0, 1, 1), Truth(10.0, -1.0))
            for n in range(70)]
    Federation([SiteSpec("solo", 8)], policy).run(jobs)
    prediction = policy.waits.predict(JobClass("solo", "", 1, 10.0, 0.0))
    assert prediction is not None
    assert (prediction.median, prediction.upper_bound, prediction.level) == (
        0.0, 0.0, "site/projection/limit")
