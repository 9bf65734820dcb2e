"""The event stream's documents (GET /api/v1/events): CloudEvents 1.0 in structured JSON
mode, one per Server-Sent Events message."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal, NotRequired, cast

# pydantic reads TypedDicts from typing_extensions on Python < 3.12.
from typing_extensions import TypedDict

JOB_STATE_TYPE: Final = "org.gridgate.job.state"
JOB_PLACEMENT_TYPE: Final = "org.gridgate.job.placement"
JOB_PREDICTION_TYPE: Final = "org.gridgate.job.prediction"
WORKFLOW_STATE_TYPE: Final = "org.gridgate.workflow.state"
WORKFLOW_STEP_TYPE: Final = "org.gridgate.workflow.step"
SITE_STATE_TYPE: Final = "org.gridgate.site.state"
ALLOCATION_USAGE_TYPE: Final = "org.gridgate.allocation.usage"
ALLOCATION_STATUS_TYPE: Final = "org.gridgate.allocation.status"
JOB_STAGING_TYPE: Final = "org.gridgate.job.staging"
ATTEMPT_STATE_TYPE: Final = "org.gridgate.attempt.state"
ALLOCATION_REFUSED_TYPE: Final = "org.gridgate.allocation.refused"
# Who may read an event, by its type (besides admins and auditors, who read all): a
# job's or a workflow's events its owner; an allocation's its project's PIs; a site's
# nobody else; a refused lien also the user it refused (the event's owner).
JOB_EVENT_TYPES = (JOB_STATE_TYPE, JOB_PLACEMENT_TYPE, JOB_STAGING_TYPE, JOB_PREDICTION_TYPE,
                   ATTEMPT_STATE_TYPE)
WORKFLOW_EVENT_TYPES = (WORKFLOW_STATE_TYPE, WORKFLOW_STEP_TYPE)
OWNED_EVENT_TYPES = JOB_EVENT_TYPES + WORKFLOW_EVENT_TYPES
ALLOCATION_EVENT_TYPES = (ALLOCATION_USAGE_TYPE, ALLOCATION_STATUS_TYPE,
                          ALLOCATION_REFUSED_TYPE)
# Allocation events their owner (the user they are about) reads besides the PIs.
SUBMITTER_EVENT_TYPES = (ALLOCATION_REFUSED_TYPE,)
SITE_EVENT_TYPES = (SITE_STATE_TYPE,)
# Every event type the stream carries (the `type` filter accepts these).
EVENT_TYPES = OWNED_EVENT_TYPES + ALLOCATION_EVENT_TYPES + SITE_EVENT_TYPES
# The shares of an allocation's award whose crossing by its use is an event.
USAGE_THRESHOLDS_PERCENT = (50, 80, 100)
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
    return cast(JobStateEvent, gateway_event(event_id, base_url, JOB_STATE_TYPE,
                                             data["job"]["id"], at, data))


def _time(at: datetime) -> str:
    aware = at if at.tzinfo else at.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")


class JobPlacementData(TypedDict):
    """The router placed a job (`site: auto`): the sites `chosen` (more than one when
    hedged), by which `policy`, `why` in words, the `deadline` of a hedge, and when it
    predicted the job to start (`predicted_start`, RFC 3339; null when it forecast none;
    absent in events recorded before it was told)."""

    policy: str
    chosen: list[str]
    why: str
    hedge: int
    deadline: str | None
    job: EventJob
    predicted_start: NotRequired[str | None]


class JobPlacementEvent(TypedDict):
    """`org.gridgate.job.placement`: as JobStateEvent, `subject` the job id."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.job.placement"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: JobPlacementData


class JobPredictionData(TypedDict):
    """A queued job's predicted start moved by more than the gateway's threshold (10
    minutes by default) since it was last told (its placement's prediction, or the
    previous such event): the new `predicted_start` and the `previous` one (RFC 3339,
    UTC; `previous` null when none was told), the `site` it waits at, and the `basis`:
    "scheduler" (the site's own estimate) or "queue projection" (the gateway's
    projection of the site's live queue)."""

    predicted_start: str
    previous: str | None
    site: str
    basis: str
    job: EventJob


class JobPredictionEvent(TypedDict):
    """`org.gridgate.job.prediction`: as JobStateEvent, `subject` the job id."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.job.prediction"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: JobPredictionData


class WorkflowStateData(TypedDict):
    """A workflow's state changed (`running`, `completed`, `failed`, `cancelled`, ...)
    or its steps moved: `message` says how (as `gridgate workflow events` shows)."""

    workflow: str
    state: str
    message: str
    actor: str


class WorkflowStateEvent(TypedDict):
    """`org.gridgate.workflow.state`: `subject` is the workflow id, `source` the
    gateway's workflows collection."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.workflow.state"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: WorkflowStateData


class WorkflowStepData(TypedDict):
    """One step instance of a workflow changed (`step` its instance id): its `state`,
    and `message` (a failure, a retry, its end)."""

    workflow: str
    step: str
    state: str
    message: str
    actor: str


class WorkflowStepEvent(TypedDict):
    """`org.gridgate.workflow.step`: as WorkflowStateEvent."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.workflow.step"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: WorkflowStepData


# `from` is a Python keyword: the functional form keeps the wire name.
SiteStateData = TypedDict("SiteStateData", {
    "site": str,
    "from": str | None,
    "to": str,
    "reason": str | None,
})
SiteStateData.__doc__ = ("A site's health as the worker sees it changed (`up`, `degraded`, "
                         "`down`, `banned`, ...), and why. Admins and auditors only.")


class SiteStateEvent(TypedDict):
    """`org.gridgate.site.state`: `subject` is the site's name, `source` the gateway's
    sites collection."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.site.state"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: SiteStateData


class AllocationUsageData(TypedDict):
    """An allocation's use passed `threshold_percent` of its award (50, 80 or 100): its
    project, the pool it is spendable at, and the service units used and awarded then.
    The project's PIs, admins and auditors see it."""

    allocation: int
    project: str
    pool: str
    threshold_percent: int
    used_su: float
    awarded_su: float


class AllocationUsageEvent(TypedDict):
    """`org.gridgate.allocation.usage`: `subject` is the allocation id, `source` the
    gateway's allocations collection."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.allocation.usage"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: AllocationUsageData


AllocationStatusData = TypedDict("AllocationStatusData", {
    "allocation": int,
    "project": str,
    "pool": str,
    "from": str,
    "to": str,
    "reason": str,
    "actor": str,
})
AllocationStatusData.__doc__ = ("An allocation was suspended (`to` `suspended`: its "
                                "project's jobs charged to it are held) or resumed, by "
                                "whom and why. The project's PIs, admins and auditors see "
                                "it.")


class AllocationStatusEvent(TypedDict):
    """`org.gridgate.allocation.status`: as AllocationUsageEvent."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.allocation.status"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: AllocationStatusData


class JobStagingData(TypedDict):
    """A job's file moving between the gateway and its site: `direction` `in` (an input,
    `path` its `dest` in the job spec) or `out`; `bytes_done` of `bytes_total` (null when
    unknown) so far. `done` is true once the file is in place (for inputs: with the job's
    hand-over to the site, in its QUEUED change); `error` says why it failed (else null).
    At most one every `GRIDGATE_STAGING_PROGRESS_SECONDS` per file, besides those."""

    direction: Literal["in", "out"]
    path: str
    bytes_done: int
    bytes_total: int | None
    done: bool
    error: str | None
    job: EventJob


class JobStagingEvent(TypedDict):
    """`org.gridgate.job.staging`: as JobStateEvent, `subject` the job id."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.job.staging"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: JobStagingData


# `from` is a Python keyword: the functional form keeps the wire name.
AttemptStateData = TypedDict("AttemptStateData", {
    "attempt": int,
    "site": str,
    "native_id": str | None,
    "from": str | None,
    "to": str,
    "reason": str | None,
    "exit_code": int | None,
    "actor": str,
    "job": EventJob,
})
AttemptStateData.__doc__ = ("One attempt of a job (its `attempt` number: a retry, a hedge "
                            "or failover sibling is another) changed state at its `site` "
                            "(`from` is null for a new attempt, SUBMITTING): the site's "
                            "job id once it has one (`native_id`), the attempt's `reason` "
                            "and `exit_code` as they are after the change.")


class AttemptStateEvent(TypedDict):
    """`org.gridgate.attempt.state`: as JobStateEvent, `subject` the job id (a job's
    attempts' events and its own come in one order)."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.attempt.state"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: AttemptStateData


class AllocationRefusedData(TypedDict):
    """A lien was refused: `project` could not cover `asked_su` at `site` (null: at any
    site) with the `available_su` its allocations there had. `allocation` is the one
    that would have been drawn first (null: the project has none that can pay there).
    `actor` asked (the submitter, or the worker re-routing a job); `job_name` is the
    job's, `job_id` null when the job was refused at submission (it was not kept). The
    project's PIs, the job's owner, admins and auditors see it."""

    allocation: int | None
    project: str
    site: str | None
    asked_su: float
    available_su: float
    actor: str
    job_name: str | None
    job_id: str | None


class AllocationRefusedEvent(TypedDict):
    """`org.gridgate.allocation.refused`: as AllocationUsageEvent; `subject` is the
    allocation id, or the project's name when no allocation of it could pay there."""

    specversion: Literal["1.0"]
    id: str
    source: str
    type: Literal["org.gridgate.allocation.refused"]
    subject: str
    time: str
    datacontenttype: Literal["application/json"]
    data: AllocationRefusedData


# Every document the stream and webhooks send, one per type.
GatewayEvent = (JobStateEvent | JobPlacementEvent | WorkflowStateEvent | WorkflowStepEvent
                | SiteStateEvent | AllocationUsageEvent | AllocationStatusEvent
                | JobStagingEvent | JobPredictionEvent | AttemptStateEvent
                | AllocationRefusedEvent)
EVENT_DOCUMENTS = (JobStateEvent, JobPlacementEvent, WorkflowStateEvent, WorkflowStepEvent,
                   SiteStateEvent, AllocationUsageEvent, AllocationStatusEvent,
                   JobStagingEvent, JobPredictionEvent, AttemptStateEvent,
                   AllocationRefusedEvent)
# The collection (under /api/v1) each type's `source` names.
_COLLECTIONS = {JOB_STATE_TYPE: "jobs", JOB_PLACEMENT_TYPE: "jobs",
                WORKFLOW_STATE_TYPE: "workflows", WORKFLOW_STEP_TYPE: "workflows",
                SITE_STATE_TYPE: "sites",
                ALLOCATION_USAGE_TYPE: "allocations", ALLOCATION_STATUS_TYPE: "allocations",
                JOB_STAGING_TYPE: "jobs", JOB_PREDICTION_TYPE: "jobs",
                ATTEMPT_STATE_TYPE: "jobs", ALLOCATION_REFUSED_TYPE: "allocations"}


def gateway_event(event_id: int, base_url: str, type_: str, subject: str, at: datetime,
                  data: Mapping[str, Any]) -> GatewayEvent:
    """The CloudEvent of one event of any type (`at` naive means UTC)."""
    return cast(GatewayEvent, {
        "specversion": "1.0", "id": str(event_id),
        "source": f"{base_url.rstrip('/')}/api/v1/{_COLLECTIONS[type_]}", "type": type_,
        "subject": subject, "time": _time(at), "datacontenttype": "application/json",
        "data": dict(data)})
