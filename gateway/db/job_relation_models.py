"""ORM models of the relations between plain jobs (issue 16): job arrays (one record per
array; its tasks are jobs with `array_job_id` and `array_index`) and job dependencies
(one row per job waited for). The job's own `gate` column says what it still waits for
(gateway.domain.job_relations)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base, utcnow


class JobArray(Base):
    """A job array as submitted: its spec (`0-9%2`), how many tasks it has and how many
    may be past ACCEPTED at once (`throttle`, None: no limit)."""

    __tablename__ = "job_arrays"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    spec: Mapped[str] = mapped_column(Text)
    task_count: Mapped[int] = mapped_column(Integer)
    throttle: Mapped[int | None] = mapped_column(Integer, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class JobDependencyRow(Base):
    """One dependency of a job: the job or job array (`depends_on_id`, no foreign key: it
    may be either) it waits for, and on what outcome (`kind`: the spec's `when`)."""

    __tablename__ = "job_dependencies"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    depends_on_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
