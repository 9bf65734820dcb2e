"""Status step: one status call for every attempt the site's scheduler has (one per
account on a site that maps accounts, unless its status account sees them all); write
only what changed."""

from __future__ import annotations

import logging
from functools import partial

from adapters.base import Adapter, JobStatus
from adapters.errors import CredentialsRefused
from gateway.services.lifecycle.statuses import apply_statuses, followed
from gateway.services.sites.entry import NoAccount, SiteEntry
from gateway.worker.context import StepContext
from gateway.worker.fanout import fan_out

log = logging.getLogger(__name__)


def poll(ctx: StepContext, site: SiteEntry) -> bool:
    """Ask the site about its active attempts; True when it was asked (it had some)."""
    with ctx.rt.sessions() as session:
        active = followed(session, site.name)
    if not active:
        return False
    # Per adapter: the ids to ask about, and those the gateway cancelled.
    asked: dict[int, tuple[Adapter, list[str], set[str]]] = {}
    for attempt in active:
        try:
            adapter = site.follower_for(attempt.owner)
        except NoAccount as exc:
            log.error("job %s at %s cannot be followed: %s", attempt.native_id, site.name,
                      exc.detail)
            continue
        _, ids, cancelled = asked.setdefault(id(adapter), (adapter, [], set()))
        ids.append(attempt.native_id)
        if attempt.cancel_sent:
            cancelled.add(attempt.native_id)

    def ask(adapter: Adapter, ids: list[str], cancelled: set[str]) -> dict[str, JobStatus]:
        try:
            found = adapter.status(ids, cancelled=cancelled)
        except CredentialsRefused as exc:  # one user's jobs wait; the others are followed
            log.error("%d job(s) at %s not followed: %s", len(ids), site.name, exc.message)
            return {}
        ctx.rt.metrics.status_calls.labels(site.name).inc()
        return dict(found)

    # A site where each researcher is their own account: one call per account, a few at
    # once.
    statuses: dict[str, JobStatus] = {}
    for found in fan_out([partial(ask, *call) for call in asked.values()],
                         ctx.rt.settings.worker_submit_threads, f"status-{site.name}"):
        statuses.update(found)
    changed = sorted(
        (a.id, statuses[a.native_id]) for a in active
        if a.native_id in statuses
        and (statuses[a.native_id].state.value, statuses[a.native_id].raw_state)
        != (a.state.value, a.raw_state)
    )
    if changed:
        with ctx.unit() as session:
            apply_statuses(session, changed, actor=ctx.holder.actor, metrics=ctx.rt.metrics)
    return True
