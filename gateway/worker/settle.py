"""Settle step: finished jobs' liens become charges from the site's usage records (see
gateway.services.money.settlement for why a crash anywhere here charges each job once)."""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from datetime import timedelta

from adapters.base import Adapter
from adapters.errors import CredentialsRefused
from adapters.usage import UsageRecord
from gateway.accounting.units import milli
from gateway.db.base import utcnow
from gateway.services.money import settlement
from gateway.services.money.settlement import RunToSettle
from gateway.services.sites.entry import NoAccount, SiteEntry
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

FAULT_BEFORE_CHARGE_ENV = "GRIDGATE_FAULT_BEFORE_CHARGE"


def settle_unrun(ctx: StepContext) -> bool:
    """Release the liens of finished jobs that never reached a scheduler (once a cycle,
    for all sites); True when there were some."""
    if not ctx.rt.settings.allocations_enforced:
        return False
    with ctx.unit() as session:
        return settlement.release_unrun(session, utcnow()) > 0


def settle(ctx: StepContext, site: SiteEntry) -> bool:
    """Charge the site's finished jobs from its usage records; True when it asked the site."""
    settings = ctx.rt.settings
    if not settings.allocations_enforced:
        return False
    with ctx.rt.sessions() as session:
        runs = settlement.finished_with_liens(session, site.name,
                                                  settlement.SETTLE_BATCH)
    if not runs:
        return False
    records = _records(site, runs)
    by_job: dict[str, list[RunToSettle]] = defaultdict(list)
    for run in runs:
        by_job[run.job_id].append(run)
    now = utcnow()
    deadline = timedelta(seconds=settings.usage_deadline_seconds)
    items = []
    with ctx.rt.sessions() as session:
        all_terms = settlement.terms(session, list(by_job))
    for job_id, job_runs in by_job.items():
        terms = all_terms[job_id]
        found = [r for run in job_runs for r in records.get(run.native_id, [])]
        if not settlement.ready(job_runs, found, terms.ended_at, now, deadline):
            continue
        made = settlement.estimated_records(job_runs, found, terms.cores,
                                            terms.walltime_seconds)
        if made:
            log.warning("job %s at %s: no usage record by the deadline; charged as "
                        "estimated", job_id, site.name)
        items.append(settlement.ToSettle(job_id, [*found, *made], terms))
    if items:
        with ctx.unit() as session:
            settlement.settle_jobs(session, site.name, items, now,
                                   milli(settings.refund_cap_su))
            _fault_before_charge()
    return True


def _fault_before_charge() -> None:
    """Test-only crash point (off unless the env says `exit`): die like `kill -9` after
    the records were fetched and the charges posted, before the commit."""
    if os.environ.get(FAULT_BEFORE_CHARGE_ENV) == "exit":
        os._exit(137)


def _records(site: SiteEntry, runs: list[RunToSettle]) -> dict[str, list[UsageRecord]]:
    """The site's usage records of these runs, by native id (one query per account, or
    one of the site's status account)."""
    asked: dict[int, tuple[Adapter, list[str]]] = {}
    for run in runs:
        try:
            adapter = site.follower_for(run.owner)
        except NoAccount as exc:
            log.error("job %s at %s cannot be settled: %s", run.job_id, site.name, exc.detail)
            continue
        asked.setdefault(id(adapter), (adapter, []))[1].append(run.native_id)
    found: dict[str, list[UsageRecord]] = defaultdict(list)
    for adapter, ids in asked.values():
        try:
            records = adapter.usage(ids)
        except CredentialsRefused as exc:  # settled once the user is back, or estimated
            log.error("%d run(s) at %s not settled now: %s", len(ids), site.name, exc.message)
            continue
        for record in records:
            found[record.native_id].append(record)
    return found
