"""The documents the client returns: the API's own schemas (`gateway.schemas`).

They are the raw API objects (what `--json` prints) as typed dicts, validated on
receipt; timestamps are `datetime`s. The names here are the client's.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.schemas.jobs import AttemptOut as Attempt
from gateway.schemas.jobs import EventOut as Event
from gateway.schemas.jobs import JobArrayList as JobArrayPage
from gateway.schemas.jobs import JobArrayOut as JobArray
from gateway.schemas.jobs import JobList as JobPage
from gateway.schemas.jobs import JobOut as Job
from gateway.schemas.jobs import JobOutputOut as JobOutput
from gateway.schemas.sites import Health
from gateway.schemas.sites import SiteOut as Site
from gateway.schemas.uploads import UploadOut as Upload

__all__ = ["FINAL_STATES", "STARTED_STATES", "Attempt", "Event", "Health", "Job", "JobArray",
           "JobArrayPage", "JobOutput", "JobPage", "Output", "Site", "Upload", "is_final"]

FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
# A job in one of these has started running (or ended): `gridgate wait --until running`.
STARTED_STATES = FINAL_STATES | {"RUNNING", "STAGING_OUT"}


@dataclass(frozen=True)
class Output:
    """A piece of a job's stdout or stderr: `data` starts at byte `offset` of `size` so far."""

    data: bytes
    offset: int
    size: int


def is_final(job: Job) -> bool:
    """True when the job will not change state any more."""
    return job["state"] in FINAL_STATES
