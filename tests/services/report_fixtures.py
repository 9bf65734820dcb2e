"""A small bank history for report tests, made the way the gateway makes it: allocations
granted and adjusted through gateway.services.money.allocations, liens held and settled through
gateway.services.money.bank from usage records and the charging rules (no ledger row by hand).

Two sites: alpha at 1 SU per core-hour, beta at 2 (rate card v1 each). Project `astro`
(PI `pi`, member `member`) has 100 SU federation-wide from DAY0, then:

  job  owner   site   cores  run    wait   settled     charge
  j1   pi      alpha  2      1 h    100 s  DAY0+1d     2 SU
  j2   member  beta   4      1 h    300 s  NOW-5d      8 SU
  j3   member  alpha  32     0.5 h  900 s  NOW-2d      16 SU, node failure: 16 SU refunded
  j4   member  beta   -      -      -      (held)      lien of 5 SU, still waiting
  adjustment +10 SU at NOW-1d ("extra for the review").

Project `geo` (owner `other`) has 50 SU at alpha and one job (j5: 1 core, 2 h, 2 SU).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from adapters.reasons import Reason
from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState
from gateway.repositories.identity import projects
from gateway.repositories.money import rate_cards
from gateway.services.money import allocations, bank
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW

DAY0 = NOW - timedelta(days=40)
ALPHA, BETA = Rate(core_hour_milli=1000), Rate(core_hour_milli=2000)
WALLTIME = 4 * 3600
REFUND_CAP = 100_000


@dataclass
class World:
    """What the history made: project names, allocation ids, job ids."""

    astro: str
    geo: str
    astro_allocation: int
    geo_allocation: int
    jobs: dict[str, str]
    now: datetime


def _run(s: Session, owner: str, payer: Payer, site: str, rate: Rate, cores: int,
         hours: float, wait: int, settled: datetime, reason: str | None = None) -> str:
    """A job held for, run (one attempt, the winner) and settled from its usage record."""
    created = settled - timedelta(hours=hours, seconds=wait + 600)
    job_id = bf.job(s, owner, payer.project_id, site)
    # The lien: the quote for the run plus 1 SU (what was asked is a little more than used).
    quote = int(cores * hours * rate.core_hour_milli) + 1000
    bank.hold(s, job_id, payer, site, quote, created, "gateway")
    started = created + timedelta(seconds=wait)
    ended = started + timedelta(hours=hours)
    native = uuid.uuid4().hex[:8]
    attempt = Attempt(job_id=job_id, number=1, site_name=site, tag=f"gw-{job_id}",
                      native_id=native, state=AttemptState.COMPLETED, workdir="/w",
                      created_at=created, submitted_at=created, started_at=started,
                      ended_at=ended)
    s.add(attempt)
    s.flush()
    job = s.get(Job, job_id)
    assert job is not None
    job.created_at, job.state, job.winner_attempt_id = created, "COMPLETED", attempt.id
    row, record = bf.usage_row(s, job_id, site, native, cores=cores,
                               elapsed=int(hours * 3600), started_at=started,
                               ended_at=ended, reason=reason)
    row.received_at = settled
    bank.settle(s, job_id, [(row, charge_for(record, rate, WALLTIME, REFUND_CAP))], settled,
                "worker")
    return job_id


def build(s: Session, pi: str, member: str, other: str, now: datetime = NOW) -> World:
    """The history above, ending at `now`, in one session (the caller commits)."""
    day0 = now - (NOW - DAY0)
    for name, rate in (("alpha", ALPHA), ("beta", BETA)):
        bf.site(s, name)
        rate_cards.ensure_current(s, name, rate).created_at = day0 - timedelta(days=1)
    astro, geo = bf.project(s, pi), bf.project(s, other)
    projects.add_member(s, astro.id, pi, "manager")
    projects.add_member(s, astro.id, member, "member")
    projects.add_member(s, geo.id, other, "manager")
    sites = {"alpha", "beta"}
    a = allocations.grant(s, Grant(astro.name, "*", 100_000, day0, now + timedelta(days=60)),
                          sites, "committee", "2026 award", day0)
    g = allocations.grant(s, Grant(geo.name, "alpha", 50_000, day0, now + timedelta(days=60)),
                          sites, "committee", "2026 award", day0)
    pa, pg = Payer(astro.id, astro.name), Payer(geo.id, geo.name)
    jobs = {
        "j1": _run(s, pi, pa, "alpha", ALPHA, 2, 1, 100, day0 + timedelta(days=1)),
        "j2": _run(s, member, pa, "beta", BETA, 4, 1, 300, now - timedelta(days=5)),
        "j3": _run(s, member, pa, "alpha", ALPHA, 32, 0.5, 900, now - timedelta(days=2),
                   reason=Reason.NODE_FAIL),
        "j5": _run(s, other, pg, "alpha", ALPHA, 1, 2, 60, now - timedelta(days=3)),
    }
    j4 = bf.job(s, member, astro.id, "beta")
    waiting = s.get(Job, j4)
    assert waiting is not None
    waiting.created_at = now - timedelta(hours=1)
    bank.hold(s, j4, pa, "beta", 5000, now - timedelta(hours=1), "gateway")
    jobs["j4"] = j4
    allocations.adjust(s, a.id, 10_000, "committee", "extra for the review",
                       now - timedelta(days=1))
    return World(astro.name, geo.name, a.id, g.id, jobs, now)
