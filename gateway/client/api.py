"""`GatewayClient`: a typed httpx client of the gateway's REST API (/api/v1). Its plumbing
is gateway.client.transport, the bank's methods gateway.client.bank_api, and how short
ids are resolved gateway.client.job_ids."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, cast
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from gateway.client import event_stream, job_ends, job_ids, job_waits
from gateway.client.bank_api import Amount, BankMethods, ReportKind
from gateway.client.errors import GatewayUnreachable, StreamEnded, transport_reason
from gateway.client.models import (
    FINAL_STATES,
    Event,
    Health,
    Job,
    JobArray,
    JobArrayPage,
    JobOutput,
    JobPage,
    Output,
    Site,
    Upload,
    is_final,
)
from gateway.client.transport import (
    StreamContext,
    TokenProvider,
    int_header,
    segment,
)
from gateway.client.urls import DEFAULT_GATEWAY_URL
from gateway.client.workflow_api import WorkflowMethods
from gateway.schemas.audit import AuditVerifyOut, ConsistencyOut, JobStoryOut, StoryJobList
from gateway.schemas.events import GatewayEvent
from gateway.schemas.identity import MeOut
from gateway.schemas.jobs import EventList, JobOutputList
from gateway.schemas.placements import EstimateOut, PlacementOut
from gateway.schemas.sites import SiteList
from gateway.schemas.uploads import UploadList
from gateway.schemas.webhooks import (
    DeliveryList,
    DeliveryOut,
    NewWebhookOut,
    WebhookList,
    WebhookOut,
)

__all__ = ["DEFAULT_GATEWAY_URL", "Amount", "GatewayClient", "ReportKind", "Stream",
           "TokenProvider"]

Stream = Literal["stdout", "stderr"]


class GatewayClient(BankMethods, WorkflowMethods):
    """The REST API as methods. Errors are `gateway.client.errors.ClientError`s.

    `transport` is the test seam: any `httpx.BaseTransport` (a real gateway is used
    otherwise, at `base_url`).
    """

    # -- jobs ---------------------------------------------------------------------------

    def submit(self, spec: Mapping[str, Any] | BaseModel, *,
               idempotency_key: str | None = None) -> Job:
        """POST /jobs: accept a job (202). The same key and body return the same job."""
        body = (spec.model_dump(mode="json", exclude_unset=True)
                if isinstance(spec, BaseModel) else dict(spec))
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._document(Job, "POST", "/jobs", json=body, headers=headers)

    def list_jobs(self, *, state: str | Sequence[str] | None = None, site: str | None = None,
                  project: str | None = None, labels: Mapping[str, str] | None = None,
                  limit: int = 50, cursor: str | None = None, name: str | None = None,
                  id_prefix: str | None = None, mine: bool = False,
                  array_job_id: str | None = None, array_index: int | None = None,
                  name_glob: str | None = None, origin: str | None = None) -> JobPage:
        """GET /jobs: one page of your jobs, newest first (`state`: one or more states or
        Slurm's names for them, each may be a comma list; `name`: exactly; `name_glob`:
        '*' and '?' wildcards; `id_prefix`: ids starting with it; `mine`: only yours even
        when you may read everyone's; `array_job_id`, `array_index`: tasks of a job
        array; `origin`: "api" or "tes", the door they came in by)."""
        params: list[tuple[str, str | int]] = [("limit", limit)]
        if mine:
            params.append(("mine", "true"))
        states = [state] if isinstance(state, str) else list(state or [])
        params += [("state", s) for s in states]
        for key, value in (("site", site), ("project", project), ("cursor", cursor),
                           ("name", name), ("name_glob", name_glob), ("id_prefix", id_prefix),
                           ("array_job_id", array_job_id), ("array_index", array_index),
                           ("origin", origin)):
            if value is not None:
                params.append((key, value))
        params += [("label", f"{k}={v}") for k, v in (labels or {}).items()]
        return self._document(JobPage, "GET", "/jobs", params=params)

    def iter_jobs(self, *, state: str | Sequence[str] | None = None, site: str | None = None,
                  project: str | None = None, labels: Mapping[str, str] | None = None,
                  page_size: int = 100, name: str | None = None,
                  mine: bool = False, array_job_id: str | None = None,
                  name_glob: str | None = None, origin: str | None = None) -> Iterator[Job]:
        """Every matching job, following `next_cursor` page by page."""
        cursor: str | None = None
        while True:
            page = self.list_jobs(state=state, site=site, project=project, labels=labels,
                                  limit=page_size, cursor=cursor, name=name, mine=mine,
                                  array_job_id=array_job_id, name_glob=name_glob,
                                  origin=origin)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def get_job(self, job_id: str) -> Job:
        """GET /jobs/{id}, with its attempts."""
        return self._document(Job, "GET", f"/jobs/{segment(job_id)}")

    def cancel(self, job_id: str) -> Job:
        """POST /jobs/{id}/cancel (202); the job ends CANCELLED once the site confirms."""
        return self._document(Job, "POST", f"/jobs/{segment(job_id)}/cancel")

    def hold(self, job_id: str) -> Job:
        """POST /jobs/{id}/hold: keep an ACCEPTED job from being routed or submitted
        (ConflictError once a worker has taken it)."""
        return self._document(Job, "POST", f"/jobs/{segment(job_id)}/hold")

    def release(self, job_id: str) -> Job:
        """POST /jobs/{id}/release: let a held job run."""
        return self._document(Job, "POST", f"/jobs/{segment(job_id)}/release")

    def resolve_job_id(self, text: str) -> str:
        """The id of the job `text` names: a whole id, a unique start of one, or
        ARRAY_INDEX for a task of a job array (gateway.client.job_ids)."""
        return job_ids.resolve_job_id(self, text)

    # -- job arrays (their tasks are jobs: list_jobs(array_job_id=...)) -----------------

    def list_job_arrays(self, *, id_prefix: str | None = None, mine: bool = False,
                        limit: int = 50, cursor: str | None = None) -> JobArrayPage:
        """GET /job-arrays: one page of your job arrays, newest first."""
        params: list[tuple[str, str | int]] = [("limit", limit)]
        if mine:
            params.append(("mine", "true"))
        for key, value in (("id_prefix", id_prefix), ("cursor", cursor)):
            if value is not None:
                params.append((key, value))
        return self._document(JobArrayPage, "GET", "/job-arrays", params=params)

    def get_job_array(self, array_id: str) -> JobArray:
        """GET /job-arrays/{id}: the array and how many of its tasks are in each state."""
        return self._document(JobArray, "GET", f"/job-arrays/{segment(array_id)}")

    def cancel_job_array(self, array_id: str) -> JobArray:
        """POST /job-arrays/{id}/cancel (202): every unfinished task of the array."""
        return self._document(JobArray, "POST", f"/job-arrays/{segment(array_id)}/cancel")

    def events(self, job_id: str) -> list[Event]:
        """GET /jobs/{id}/events: every state change, oldest first (all pages)."""
        return self._every_page(EventList, f"/jobs/{segment(job_id)}/events")

    def stream_events(self, job_ids: Sequence[str] | None = None,
                      types: Sequence[str] | None = None, last_event_id: str | None = None,
                      *, project: str | None = None, workflow: str | None = None,
                      reconnects: int = 5) -> Iterator[GatewayEvent]:
        """GET /events: the events you may read (only `job_ids`', the `project`'s or the
        `workflow`'s, of `types`, if given; switch on each one's `type`, and let types
        you do not know pass) as CloudEvents, from now on or after
        `last_event_id`, until you stop iterating. A dropped stream is resumed after the
        last event received; a resume from beyond the gateway's replay window raises
        ReplayGone. (`events` is a job's history, read once.)"""
        params = [("job", job) for job in job_ids or ()] + [("type", t) for t in types or ()]
        params += [(name, value) for name, value in (("project", project),
                                                     ("workflow", workflow)) if value]
        return event_stream.stream_events(self, params, last_event_id, reconnects)

    def placement(self, job_id: str) -> PlacementOut:
        """GET /jobs/{id}/placement: the routing decision that placed the job, as made."""
        return self._document(PlacementOut, "GET", f"/jobs/{segment(job_id)}/placement")

    def audit_verify(self) -> AuditVerifyOut:
        """GET /audit/verify: where the audit log first stops holding, if anywhere, and
        the ledger's problems (auditors and admins)."""
        return self._document(AuditVerifyOut, "GET", "/audit/verify")

    def audit_job(self, job_id: str) -> JobStoryOut:
        """GET /audit/jobs/{id}: the job's story from request to charge."""
        return self._document(JobStoryOut, "GET", f"/audit/jobs/{segment(job_id)}")

    def audit_consistency(self, first: int, second: int) -> ConsistencyOut:
        """GET /audit/consistency: the proof that the signed tree of `first` entries is a
        prefix of the signed tree of `second` (auditors and admins)."""
        return self._document(ConsistencyOut, "GET", "/audit/consistency",
                              params={"first": first, "second": second})

    def published_keys(self) -> dict[str, Any]:
        """GET /.well-known/jwks.json: the keys the gateway signs with (tokens, the audit
        log's tree heads); no token needed."""
        return cast(dict[str, Any], self._json("GET", f"{self.base_url}/.well-known/jwks.json",
                                               auth=None))

    def audit_jobs(self, id_prefix: str, *, limit: int = 50) -> StoryJobList:
        """GET /audit/jobs?id_prefix=: the jobs whose story you may read (yours, your
        projects' as their PI, all for auditors and admins) whose id starts so."""
        return self._document(StoryJobList, "GET", "/audit/jobs",
                              params=[("id_prefix", id_prefix), ("limit", limit)])

    def resolve_audited_job_id(self, text: str) -> str:
        """`resolve_job_id` over the jobs whose story you may read (`audit_jobs`)."""
        return job_ids.resolve_job_id(
            self, text, find=lambda prefix, n: self.audit_jobs(prefix, limit=n)["items"])

    def estimate(self, spec: Mapping[str, Any] | BaseModel) -> EstimateOut:
        """POST /jobs:estimate: where the job would go now and why (nothing submitted)."""
        body = (spec.model_dump(mode="json", exclude_unset=True)
                if isinstance(spec, BaseModel) else dict(spec))
        return self._document(EstimateOut, "POST", "/jobs:estimate", json=body)

    def output(self, job_id: str, stream: Stream = "stdout", *, offset: int | None = None,
               tail: int | None = None) -> Output:
        """GET /jobs/{id}/logs/{stream}: from `offset`, or the last `tail` bytes."""
        params: dict[str, int] = {}
        if offset is not None:
            params["offset"] = offset
        if tail is not None:
            params["tail"] = tail
        response = self._request("GET", f"/jobs/{segment(job_id)}/logs/{stream}",
                                 params=params)
        data = response.content
        size = int_header(response, "X-Output-Size", (offset or 0) + len(data))
        if offset is not None:
            start = offset
        else:  # a tail ends at the size reported with it; no parameters: from 0
            start = max(0, size - len(data)) if tail is not None else 0
        return Output(data=data, offset=start, size=size)

    def follow(self, job_id: str, stream: Stream = "stdout", *, offset: int = 0,
               tail: int | None = None, reconnects: int = 5) -> Iterator[bytes]:
        """Stream the job's output as it is written, until the job is final and all
        output was sent. A dropped connection is resumed from the last byte received.
        The job's end is learnt from the event stream (gateway.client.job_ends), so the
        follow stops the moment it ends; a gateway without one ends the follow itself."""
        path = f"/jobs/{segment(job_id)}/logs/{stream}"
        position = offset
        if tail is not None:
            first = self.output(job_id, stream, tail=tail)
            if first.data:
                yield first.data
            position = first.offset + len(first.data)
        failures = 0
        ended: str | None = None  # why the last stream stopped before the job's end
        with job_ends.EndWatch(self, job_id) as end:
            while not end.ended.is_set():
                try:
                    with self._stream("GET", path,
                                      params={"follow": "true", "offset": position}) as response:
                        end.following(response)
                        try:
                            for chunk in response.iter_bytes():
                                position += len(chunk)
                                failures = 0
                                yield chunk
                        finally:
                            end.following(None)  # before the connection goes back to the pool
                    # The gateway ends a follow when the job is over, or early when it stops
                    # (gateway.api.http.stopping): then it is resumed, like a dropped
                    # connection.
                    ended = "the gateway ended the stream before the job ended"
                    if is_final(self.get_job(job_id)):
                        break
                except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                    if end.ended.is_set():  # cut by the end watch: the job is over
                        break
                    ended = f"the connection to the gateway broke ({transport_reason(exc)})"
                except GatewayUnreachable as exc:
                    if ended is None:  # the first request: no stream to resume
                        raise
                    if failures >= reconnects:
                        raise StreamEnded(self.base_url, job_id, stream, ended, exc.reason) \
                            from exc
                failures += 1
                time.sleep(min(2.0 ** failures / 4, 5.0))
        # The job has ended: what is left (a cut stream's, or what a stopping gateway left
        # unsent) is read to its end.
        while True:
            rest = self.output(job_id, stream, offset=position)
            position += len(rest.data)
            if rest.data:
                yield rest.data
            if not rest.data or position >= rest.size:
                return

    def wait(self, job_id: str, *, poll_seconds: float = 1.0, timeout: float | None = None,
             on_update: Callable[[Job], None] | None = None,
             until: frozenset[str] = FINAL_STATES) -> Job:
        """Wait until the job is in one of `until` (default: final) or `timeout` seconds
        pass; returns the last view. Follows the event stream, so it returns the moment
        the job changes; polls every `poll_seconds` against a gateway without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return job_waits.wait_for_state(self, job_id, until, deadline, on_update,
                                        poll_seconds)

    # -- job files (gateway.client.downloads.fetch_outputs drives these) -----------------

    def job_outputs(self, job_id: str) -> list[JobOutput]:
        """GET /jobs/{id}/outputs: the job's collected outputs."""
        return self._every_page(JobOutputList, f"/jobs/{segment(job_id)}/outputs")

    def open_job_output(self, job_id: str, path: str, *, offset: int = 0) -> StreamContext:
        """GET /jobs/{id}/outputs/{path} from byte `offset` (a Range): use with `with`, then
        iterate the response's bytes."""
        quoted = "/".join(quote(part, safe="") for part in path.split("/"))
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        return self._stream("GET", f"/jobs/{segment(job_id)}/outputs/{quoted}",
                            headers=headers)

    # -- uploads (gateway.client.uploads.upload_file drives these) ----------------------

    def create_upload(self, name: str, size: int, sha256: str | None = None) -> Upload:
        """POST /uploads: start an upload of `size` bytes (413 over a limit or quota)."""
        body: dict[str, Any] = {"name": name, "size": size}
        if sha256 is not None:
            body["sha256"] = sha256
        return self._document(Upload, "POST", "/uploads", json=body)

    def get_upload(self, upload_id: str) -> Upload:
        """GET /uploads/{id}; its `offset` is where to resume."""
        return self._document(Upload, "GET", f"/uploads/{segment(upload_id)}")

    def list_uploads(self) -> list[Upload]:
        """GET /uploads: your uploads, newest first (all pages)."""
        return self._every_page(UploadList, "/uploads")

    def put_chunk(self, upload_id: str, data: bytes, start: int, total: int) -> Upload:
        """PUT one chunk at byte `start` of a `total`-byte file. A ConflictError's
        `problem["offset"]` says where the gateway wants the next chunk to start."""
        headers = {"Content-Range": f"bytes {start}-{start + len(data) - 1}/{total}",
                   "Content-Type": "application/octet-stream"}
        return self._document(Upload, "PUT", f"/uploads/{segment(upload_id)}",
                              content=data, headers=headers)

    def complete_upload(self, upload_id: str, sha256: str | None = None) -> Upload:
        """POST /uploads/{id}/complete: the gateway verifies size and sha256."""
        body = {"sha256": sha256} if sha256 is not None else {}
        return self._document(Upload, "POST", f"/uploads/{segment(upload_id)}/complete",
                              json=body)

    def delete_job_outputs(self, job_id: str) -> None:
        """DELETE /jobs/{id}/outputs: drop the job's outputs held in the gateway store."""
        self._request("DELETE", f"/jobs/{segment(job_id)}/outputs")

    def delete_upload(self, upload_id: str) -> None:
        """DELETE /uploads/{id}."""
        self._request("DELETE", f"/uploads/{segment(upload_id)}")

    # -- webhooks -------------------------------------------------------------------------

    def create_webhook(self, url: str, types: Sequence[str] = (),
                       jobs: Sequence[str] = ()) -> NewWebhookOut:
        """POST /webhooks: subscribe `url`; the answer's `secret` is shown only now."""
        body = {"url": url, "types": list(types), "jobs": list(jobs)}
        return self._document(NewWebhookOut, "POST", "/webhooks", json=body)

    def webhooks(self) -> list[WebhookOut]:
        """GET /webhooks: your subscriptions (all pages)."""
        return self._every_page(WebhookList, "/webhooks")

    def webhook_deliveries(self, webhook_id: str, limit: int = 50) -> list[DeliveryOut]:
        """GET /webhooks/{id}/deliveries: the newest `limit` deliveries."""
        page = self._document(DeliveryList, "GET", f"/webhooks/{segment(webhook_id)}/deliveries",
                              params={"limit": limit})
        return page["items"]

    def redeliver(self, webhook_id: str, delivery_id: int) -> DeliveryOut:
        """POST /webhooks/{id}/deliveries/{n}/redeliver: send it again now."""
        return self._document(DeliveryOut, "POST", f"/webhooks/{segment(webhook_id)}"
                              f"/deliveries/{delivery_id}/redeliver")

    def delete_webhook(self, webhook_id: str) -> None:
        """DELETE /webhooks/{id}."""
        self._request("DELETE", f"/webhooks/{segment(webhook_id)}")

    # -- sites and system ---------------------------------------------------------------

    def sites(self) -> list[Site]:
        """GET /sites."""
        return self._every_page(SiteList, "/sites")

    def me(self) -> MeOut:
        """GET /me: who the token says you are, its scopes and your roles."""
        return self._document(MeOut, "GET", "/me")

    def health(self) -> Health:
        """GET /health (no token needed)."""
        return self._document(Health, "GET", "/health", auth=None)

    def job_spec_schema(self) -> dict[str, Any]:
        """GET /schemas/job-spec: the JSON Schema of a job request."""
        return cast(dict[str, Any], self._json("GET", "/schemas/job-spec", auth=None))
