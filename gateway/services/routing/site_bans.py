"""Black-hole bans as routing sees them now, and an admin lifting one.

The rule is pure (gateway.scheduling.black_holes); this module feeds it each site's
recent attempt history (whose job, which program, how it ended) and records a lift: the
site's `ban_lifted_at` moves to now, so what ended before no longer counts, and the
audit log records who lifted which ban and why it was in force.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from gateway.domain.errors import Conflict, NotFound
from gateway.domain.states import AttemptState, JobState
from gateway.repositories import sites as site_rows
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs.attempts import EndedAttempt
from gateway.repositories.money import audit
from gateway.scheduling.black_holes import AttemptEnd, Ban, ban_in_force
from gateway.services.sites.registry import SiteRegistry

# Ended attempts per site a ban is derived from (bans escalate over repeats).
BAN_HISTORY = 60


def program_of(spec: Mapping[str, Any]) -> str:
    """A stable key for the program a job spec runs: its container image and executable,
    or a digest of its script. Read from the stored spec as is (not jobs.stored_spec):
    every routing pass reads each site's recent ends, and no old spec may stop it."""
    container = spec.get("container") or {}
    image = str(container.get("image", "")) if isinstance(container, Mapping) else ""
    if spec.get("executable"):
        return f"{image} {spec['executable']}"
    script = json.dumps(spec.get("script"), ensure_ascii=False).encode()
    return f"{image} script:{hashlib.sha256(script).hexdigest()[:16]}"


def _end(row: EndedAttempt) -> AttemptEnd:
    reason = row.reason or ""
    # Stage-out failures and a container runtime's words are recorded on the job (the
    # attempt itself may have completed): they are this site's when the job ended here.
    failed_job = row.job_state == JobState.FAILED and row.job_reason
    if failed_job:
        reason = f"{reason}; {row.job_reason}" if reason else str(row.job_reason)
    ok = row.state is AttemptState.COMPLETED and not failed_job
    return AttemptEnd(row.ended_at.timestamp(), row.owner_id, program_of(row.spec), ok,
                      reason, row.exit_code)


def black_holes(session: Session, registry: SiteRegistry, now: datetime) -> dict[str, Ban]:
    """Site -> the ban that keeps it out of routing now (see gateway.scheduling.black_holes)."""
    lifted = {row.name: row.ban_lifted_at for row in registry.rows(session).values()}
    ends = {entry.name: [_end(row) for row in attempts.recent_ends(session, entry.name,
                                                                    BAN_HISTORY)]
            for entry in registry}
    completed = {name: {e.program for e in site_ends if e.ok} for name, site_ends in ends.items()}
    found = {}
    for name, site_ends in ends.items():
        elsewhere = set().union(*(done for other, done in completed.items() if other != name))
        at = lifted.get(name)
        ban = ban_in_force(site_ends, now.timestamp(),
                           lifted_at=None if at is None else at.timestamp(),
                           completed_elsewhere=elsewhere)
        if ban is not None:
            found[name] = ban
    return found


def unban(session: Session, registry: SiteRegistry, name: str, actor: str,
          now: datetime) -> Ban:
    """Lift the ban on site `name` now, recorded in the audit log; the ban lifted.
    NotFound for an unknown site, Conflict when it is not banned."""
    if name not in registry.names():
        raise NotFound(f"No site named {name!r}; `gridgate sites` lists them.")
    ban = black_holes(session, registry, now).get(name)
    if ban is None:
        raise Conflict(f"Site {name!r} is not out of routing; there is no ban to lift.")
    site_rows.lift_ban(session, name, now)
    audit.append(session, "site.unban", f"site:{name}", actor,
                 {"ban": ban.reason, "until": datetime.fromtimestamp(ban.until, now.tzinfo)
                  .isoformat()}, now)
    session.flush()
    return ban
