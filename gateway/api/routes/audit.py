"""/api/v1/audit: check the audit log and the ledger, read the log's signed tree heads and
consistency proofs (auditors, admins), and tell one job's story from request to charge
with its entries' inclusion proofs (its owner, its project's PI, auditors, admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from gateway.api.deps import JobsReader, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.schemas import attempt_out, event_out, json_response
from gateway.schemas.audit import (
    AuditVerifyOut,
    ConsistencyOut,
    JobStoryOut,
    StoryJobList,
    TreeHeadOut,
)
from gateway.services.jobs import story as job_story
from gateway.services.money import audit, audit_tree

router = APIRouter(prefix="/api/v1", tags=["audit"])


@router.get("/audit/verify", response_model=AuditVerifyOut)
def verify_audit(principal: JobsReader, runtime: RuntimeDep) -> Response:
    """Walk the whole audit log, hashing every entry again, against every signed tree
    head, and name where it first stops holding (edited, deleted, reordered, rewritten,
    truncated, added, forged head); check every ledger transaction against the seal of
    the entry that records it, every allocation's running sums against its ledger, and
    that every ledger transaction sums to zero."""
    audit.require_auditor(principal)
    with runtime.sessions() as session:
        document = audit.verify(session, runtime.keys, runtime.clock())
    return json_response(AuditVerifyOut, document)


@router.get("/audit/jobs", response_model=StoryJobList)
def list_story_jobs(
    principal: JobsReader, runtime: RuntimeDep,
    id_prefix: Annotated[str, Query(max_length=36, description=(
        "The start of the job's id (lower-case hex and '-'), e.g. the 8 characters tables "
        "show."))],
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> Response:
    """The jobs whose id starts with `id_prefix` and whose story you may read, newest
    first: yours, your projects' as their PI, every job for auditors and admins. How a
    client turns a short id into the job to audit (GET /jobs lists only jobs you may
    read in full)."""
    with runtime.readers() as session:
        found = job_story.readable(session, principal, id_prefix, limit, cursor)
    return json_response(StoryJobList, StoryJobList(items=list(found.rows),
                                                    next_cursor=found.next_cursor))


@router.get("/audit/jobs/{job_id}", response_model=JobStoryOut)
def get_job_story(job_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """One job from request to charge: who asked, where it was routed and why, every
    attempt, its liens, usage records and charges, each with its time."""
    with runtime.readers() as session:
        s = job_story.story(session, principal, job_id)
    j = s.job
    return json_response(JobStoryOut, JobStoryOut(
        job_id=j["id"], name=j["name"], project=j["project_name"], state=j["state"],
        created_at=j["created_at"], owner=s.owner,
        requested_by=s.events[0]["actor"] if s.events else j["owner_name"],
        events=[event_out(e) for e in s.events], placements=s.placements,
        attempts=[attempt_out(a) for a in s.attempts], liens=s.liens, usage=s.usage,
        ledger=s.ledger, audit=s.audit, tree_head=s.tree_head))


@router.get("/audit/tree-heads/latest", response_model=TreeHeadOut)
def latest_tree_head(principal: JobsReader, runtime: RuntimeDep) -> Response:
    """The audit log's newest signed tree head (auditors, admins): keep it, and ask later
    for the proof that the log then still begins with the tree it signs."""
    audit.require_auditor(principal)
    with runtime.readers() as session:
        head = audit_tree.head(session.connection(), None)
    return json_response(TreeHeadOut, head)


@router.get("/audit/tree-heads/{size}", response_model=TreeHeadOut)
def tree_head(size: int, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """The signed tree head of the log's first `size` entries, if the gateway signed one
    (auditors, admins)."""
    audit.require_auditor(principal)
    with runtime.readers() as session:
        head = audit_tree.head(session.connection(), size)
    return json_response(TreeHeadOut, head)


@router.get("/audit/consistency", response_model=ConsistencyOut)
def consistency(principal: JobsReader, runtime: RuntimeDep,
                first: Annotated[int, Query(ge=1, description="A signed tree's size.")],
                second: Annotated[int, Query(ge=1, description=(
                    "A later signed tree's size, at least `first`."))]) -> Response:
    """RFC 9162's proof that the signed tree of `first` entries is a prefix of the signed
    tree of `second`: nothing the first covered was changed, removed or moved (auditors,
    admins)."""
    audit.require_auditor(principal)
    with runtime.readers() as session:
        path = audit_tree.consistency(session.connection(), first, second)
    return json_response(ConsistencyOut, ConsistencyOut(first=first, second=second,
                                                        proof=path))

