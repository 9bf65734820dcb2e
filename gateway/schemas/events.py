"""The event stream's documents (GET /api/v1/events): CloudEvents 1.0 in structured JSON
mode, one per Server-Sent Events message."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final, Literal

# pydantic reads TypedDicts from typing_extensions on Python < 3.12.
from typing_extensions import TypedDict

JOB_STATE_TYPE: Final = "org.gridgate.job.state"
# Every event type the stream carries (the `type` filter accepts these).
EVENT_TYPES = (JOB_STATE_TYPE,)
# The SSE event name of the message a stream resumed from beyond the replay window gets
# first: its data is a problem document (status 410), its id where the stream goes on.
STREAM_GONE: Final = "org.gridgate.stream.gone"


class EventJob(TypedDict):
    """The job an event is about, as it is now (enough to print a line about it)."""

    id: str
    name: str
    site: str | None
    project: str


# `from` is a Python keyword: the functional form keeps the wire name.
JobStateData = TypedDict("JobStateData", {
    "from": str | None,
    "to": str,
    "reason": str | None,
    "raw_state": str | None,
    "actor": str,
    "job": EventJob,
})
JobStateData.__doc__ = ("A job changed state (`from` is null for the first event, ACCEPTED): "
                        "who (`actor`) and why (`reason`), the site's own state word "
                        "(`raw_state`).")


class JobStateEvent(TypedDict):
    """`org.gridgate.job.state`: a CloudEvents 1.0 structured-mode document. `id` is the
    SSE message's id (resume with `Last-Event-ID`); `subject` is the job id; `source`
    is the gateway's jobs collection; `time` is when the change was recorded (RFC 3339,
    UTC)."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.job.state"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: JobStateData


def job_state_event(event_id: int, base_url: str, at: datetime, data: JobStateData
                    ) -> JobStateEvent:
    """The CloudEvent of one state change (`at` naive means UTC), as the stream sends it
    and as the CLI shows a job's latest change."""
    aware = at if at.tzinfo else at.replace(tzinfo=UTC)
    return {
        "specversion": "1.0", "id": str(event_id),
        "source": base_url.rstrip("/") + "/api/v1/jobs", "type": JOB_STATE_TYPE,
        "subject": data["job"]["id"],
        "time": aware.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json", "data": data,
    }
