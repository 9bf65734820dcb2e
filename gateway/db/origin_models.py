"""ORM model of what a job's door received when that says more than the job spec: a GA4GH
TES task as its client sent it (its inputs, outputs, volumes and description), so the
task reads back as it was given (gateway.api.tes.task_document)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base


class OriginDocument(Base):
    """The request a job was made from, as its door (jobs.origin) reads it."""

    __tablename__ = "origin_documents"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSON)
