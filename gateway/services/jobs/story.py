"""One job's story from request to charge: who asked and as whom, where it was routed
and why, every attempt, its liens, the site's usage records and the ledger's charges,
refunds and releases, and the audit log's entries about it, each with its proof of
inclusion in the newest signed tree head.

Visible to the job's owner, its project's PI, auditors and admins; to anyone else the job
does not exist (NotFound: ids are not an oracle)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.orm import Session
from typing_extensions import TypedDict

from gateway.accounting.audit_entry import Entry
from gateway.auth.project_access import PI_ROLE, Standing, access, is_auditor
from gateway.db.bank_models import UsageRow
from gateway.domain.errors import Invalid, NotFound
from gateway.domain.principal import Principal
from gateway.repositories.jobs import queries as repo
from gateway.repositories.jobs import story as job_story
from gateway.repositories.jobs.queries import AttemptView, EventView, JobView
from gateway.repositories.money import audit, audit_tree
from gateway.schemas.audit import (
    StoryAuditOut,
    StoryJobOut,
    StoryLedgerOut,
    StoryLienOut,
    StoryOwnerOut,
    StoryPlacementOut,
    StoryUsageOut,
    TreeHeadOut,
)
from gateway.services import cursors
from gateway.services.jobs.arrays import moment
from gateway.services.jobs.queries import check_id
from gateway.services.money import audit_tree as tree_heads
from rules.text import JOB_ID_PREFIX


@dataclass(frozen=True)
class Story:
    """The job's rows, oldest first in every part."""

    job: JobView
    owner: StoryOwnerOut
    events: list[EventView]
    attempts: list[AttemptView]
    placements: list[StoryPlacementOut]
    liens: list[StoryLienOut]
    usage: list[StoryUsageOut]
    ledger: list[StoryLedgerOut]
    audit: list[StoryAuditOut]
    tree_head: TreeHeadOut | None


def story(session: Session, principal: Principal, job_id: str) -> Story:
    """The job's story, if the caller may read it."""
    check_id(job_id)
    conn = session.connection()
    job, attempts = repo.job_detail(conn, job_id, None)
    if job is None or not _may_read(session, principal, job):
        raise NotFound(f"No job with id '{job_id}'.")
    owner = job_story.owner(session, job["owner_id"])
    return Story(
        job=job,
        owner=StoryOwnerOut(username=owner.username, issuer=owner.issuer,
                            subject=owner.subject),
        events=repo.events(conn, job_id), attempts=attempts,
        placements=[StoryPlacementOut(decided_at=p.decided_at, policy=p.policy, hedge=p.hedge,
                                      chosen=list(p.chosen), why=p.why)
                    for p in job_story.placements(session, job_id)],
        liens=[StoryLienOut(id=lien.id, allocation_id=lien.allocation_id, site=lien.site_name,
                            amount_milli=lien.amount_milli, status=lien.status,
                            created_at=lien.created_at, closed_at=lien.closed_at)
               for lien in job_story.liens(session, job_id)],
        usage=[_usage(u) for u in job_story.usage(session, job_id)],
        ledger=[StoryLedgerOut(at=e.at, txn=e.txn, kind=e.kind, allocation_id=e.allocation_id,
                               account=e.account, amount_milli=e.amount_milli,
                               reason=e.reason, actor=e.actor)
                for e in job_story.ledger(session, job_id)],
        **_audit(conn, job_id),
    )


class _Audit(TypedDict):
    audit: list[StoryAuditOut]
    tree_head: TreeHeadOut | None


def _audit(conn: Connection, job_id: str) -> _Audit:
    """The job's entries with their inclusion proofs in the newest signed head (read
    after the entries: an entry the head does not cover yet shows no proof)."""
    entries = audit.of_subject(conn, f"job:{job_id}")
    head = audit_tree.latest_head(conn)
    size = 0 if head is None else head.size
    proofs = audit_tree.inclusion(conn, (e.seq for e in entries if e.seq is not None), size)

    def told(e: Entry, kind: str) -> StoryAuditOut:
        leaf = e.seq if e.seq in proofs else None
        return StoryAuditOut(id=e.id, at=e.at, kind=kind, actor=e.actor,
                             entry=e.canonical().decode(), leaf=leaf,
                             proof=None if leaf is None else proofs[leaf])

    return _Audit(audit=[told(e, kind) for e in entries for kind, _ in e.told()],
                  tree_head=None if head is None else tree_heads.head_out(head))


def readable(session: Session, principal: Principal, id_prefix: str, limit: int,
             cursor: str | None = None) -> cursors.Page[StoryJobOut]:
    """The jobs whose id starts with `id_prefix` and whose story the caller may read (the
    rule of `_may_read`: theirs, their projects' as a PI, every job for auditors and
    admins), newest first: how a short id names a job to audit."""
    if not JOB_ID_PREFIX.matches(id_prefix):
        raise Invalid(str(JOB_ID_PREFIX.problem(id_prefix)), field="id_prefix")
    after = None
    if cursor:
        created, job_id = cursors.decode(cursor, (str, str))
        after = (moment(str(created)), str(job_id))
    reads_all = "admin" in principal.roles or is_auditor(principal)
    rows = job_story.readable(session, id_prefix, None if reads_all else principal.user_id,
                              PI_ROLE, limit + 1, after)
    return cursors.page(rows, limit, lambda row: (row["created_at"].isoformat(), row["id"]))


def _may_read(session: Session, principal: Principal, job: JobView) -> bool:
    """The owner, and whoever reads everyone's usage in the job's project."""
    if job["owner_id"] == principal.user_id:
        return True
    try:
        standing = access(session, principal, job["project_name"]).standing
    except NotFound:
        return False
    return standing is not Standing.MEMBER


def _usage(u: UsageRow) -> StoryUsageOut:
    return StoryUsageOut(site=u.site_name, native_id=u.native_id, run=u.run, source=u.source,
                         received_at=u.received_at, started_at=u.started_at,
                         ended_at=u.ended_at, elapsed=u.elapsed,
                         cores=u.cores, state=u.state, exit_code=u.exit_code,
                         estimated=u.estimated, charged_milli=u.charged_milli,
                         refunded_milli=u.refunded_milli, rule=u.rule)
