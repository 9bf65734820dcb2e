"""What a job's door received, beside the job (gateway.db.origin_models)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.orm import Session

from gateway.db.origin_models import OriginDocument


def add(session: Session, job_id: str, document: Mapping[str, Any]) -> None:
    """Keep the request job `job_id` was made from."""
    session.execute(insert(OriginDocument).values(job_id=job_id, document=dict(document)))


def of_jobs(conn: Connection, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Job id -> the request it was made from, for those of `job_ids` that have one."""
    if not job_ids:
        return {}
    rows = conn.execute(select(OriginDocument.job_id, OriginDocument.document)
                        .where(OriginDocument.job_id.in_(job_ids)))
    return {job_id: document for job_id, document in rows}
