"""`GatewayClient`: a typed httpx client of the gateway's REST API (/api/v1)."""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypeVar, cast
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from adapters.text_rules import JOB_ID_PREFIX
from gateway import __version__
from gateway.client.errors import (
    AmbiguousJobId,
    AuthenticationRequired,
    ClientError,
    GatewayUnreachable,
    StreamEnded,
    problem_error,
    transport_reason,
)
from gateway.client.models import (
    Event,
    Health,
    Job,
    JobOutput,
    JobPage,
    Output,
    Site,
    Upload,
    is_final,
)
from gateway.client.urls import DEFAULT_GATEWAY_URL, name_gateway
from gateway.schemas import parse
from gateway.schemas.audit import AuditVerifyOut, JobStoryOut
from gateway.schemas.identity import MeOut
from gateway.schemas.jobs import EventList, JobOutputList
from gateway.schemas.placements import EstimateOut, PlacementOut
from gateway.schemas.projects import (
    AllocationList,
    AllocationOut,
    BalanceOut,
    MemberOut,
    ProjectList,
    ProjectOut,
    ProjectSummaryOut,
    TransferOut,
)
from gateway.schemas.reports import (
    AdjustmentReport,
    AllocationReport,
    JobUsageList,
    UsageReport,
    WaitReport,
)
from gateway.schemas.sites import SiteList
from gateway.schemas.uploads import UploadList

__all__ = ["DEFAULT_GATEWAY_URL", "GatewayClient", "Stream", "TokenProvider"]

API_PREFIX = "/api/v1"
# Jobs an ambiguous short id lists (and asks for one more, to say there are more).
MAX_ID_CANDIDATES = 10
# Items per page when the client reads a whole list (the API allows up to 500).
PAGE_SIZE = 500

Stream = Literal["stdout", "stderr"]
# Returns a bearer token, or None to send the request without one. It may raise
# AuthenticationRequired (not logged in, or the session expired).
TokenProvider = Callable[[], str | None]
Document = TypeVar("Document")
# Service units: sent as decimal text, so no float rounding on the way.
Amount = Decimal | int | str
ReportKind = Literal["allocations", "usage", "waits", "adjustments"]
REPORT_DOCUMENTS: dict[str, Any] = {"allocations": AllocationReport, "usage": UsageReport,
                                    "waits": WaitReport, "adjustments": AdjustmentReport}


class _BearerAuth(httpx.Auth):
    """Asks the provider for a token on every request, so refreshes happen in time."""

    def __init__(self, provider: TokenProvider) -> None:
        self.provider = provider

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.provider()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


class GatewayClient:
    """The REST API as methods. Errors are `gateway.client.errors.ClientError`s.

    `transport` is the test seam: any `httpx.BaseTransport` (a real gateway is used
    otherwise, at `base_url`).
    """

    def __init__(self, base_url: str = DEFAULT_GATEWAY_URL,
                 token_provider: TokenProvider | None = None, *,
                 transport: httpx.BaseTransport | None = None,
                 timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url + API_PREFIX,
            auth=_BearerAuth(token_provider) if token_provider else None,
            transport=transport or _plain_http_transport(self.base_url),
            timeout=timeout,
            headers={"User-Agent": f"gridgate-client/{__version__}",
                     "Accept": "application/json, application/problem+json"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- jobs ---------------------------------------------------------------------------

    def submit(self, spec: Mapping[str, Any] | BaseModel, *,
               idempotency_key: str | None = None) -> Job:
        """POST /jobs: accept a job (202). The same key and body return the same job."""
        body = (spec.model_dump(mode="json", exclude_unset=True)
                if isinstance(spec, BaseModel) else dict(spec))
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._document(Job, "POST", "/jobs", json=body, headers=headers)

    def list_jobs(self, *, state: str | None = None, site: str | None = None,
                  project: str | None = None, labels: Mapping[str, str] | None = None,
                  limit: int = 50, cursor: str | None = None, name: str | None = None,
                  id_prefix: str | None = None, mine: bool = False) -> JobPage:
        """GET /jobs: one page of your jobs, newest first (`name`: exactly; `id_prefix`:
        ids starting with it; `mine`: only yours even when you may read everyone's)."""
        params: list[tuple[str, str | int]] = [("limit", limit)]
        if mine:
            params.append(("mine", "true"))
        for key, value in (("state", state), ("site", site), ("project", project),
                           ("cursor", cursor), ("name", name), ("id_prefix", id_prefix)):
            if value is not None:
                params.append((key, value))
        params += [("label", f"{k}={v}") for k, v in (labels or {}).items()]
        return self._document(JobPage, "GET", "/jobs", params=params)

    def iter_jobs(self, *, state: str | None = None, site: str | None = None,
                  project: str | None = None, labels: Mapping[str, str] | None = None,
                  page_size: int = 100, name: str | None = None,
                  mine: bool = False) -> Iterator[Job]:
        """Every matching job, following `next_cursor` page by page."""
        cursor: str | None = None
        while True:
            page = self.list_jobs(state=state, site=site, project=project, labels=labels,
                                  limit=page_size, cursor=cursor, name=name, mine=mine)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def get_job(self, job_id: str) -> Job:
        """GET /jobs/{id}, with its attempts."""
        return self._document(Job, "GET", f"/jobs/{_segment(job_id)}")

    def cancel(self, job_id: str) -> Job:
        """POST /jobs/{id}/cancel (202); the job ends CANCELLED once the site confirms."""
        return self._document(Job, "POST", f"/jobs/{_segment(job_id)}/cancel")

    def hold(self, job_id: str) -> Job:
        """POST /jobs/{id}/hold: keep an ACCEPTED job from being routed or submitted
        (ConflictError once a worker has taken it)."""
        return self._document(Job, "POST", f"/jobs/{_segment(job_id)}/hold")

    def release(self, job_id: str) -> Job:
        """POST /jobs/{id}/release: let a held job run."""
        return self._document(Job, "POST", f"/jobs/{_segment(job_id)}/release")

    def resolve_job_id(self, text: str) -> str:
        """The id of the job `text` names: a whole id as it is, else the one job of yours
        whose id starts with it (`d3eca39f`), found by the gateway in one request.
        NotFoundError when none does; AmbiguousJobId, listing them, when several do."""
        wanted = text.strip().lower()
        if _is_job_id(wanted):
            return wanted
        if not JOB_ID_PREFIX.matches(wanted):  # cannot start any id: no need to ask
            raise problem_error(404, {"title": "Not found", "detail": (
                f"No job of yours has an id starting with '{text}' ("
                f"{JOB_ID_PREFIX.hint}).")})
        page = self.list_jobs(id_prefix=wanted, mine=True, limit=MAX_ID_CANDIDATES + 1)
        found = page["items"]
        if len(found) == 1:
            return found[0]["id"]
        if not found:
            raise problem_error(404, {"title": "Not found", "detail": (
                f"No job of yours has an id starting with '{text}'.")})
        raise AmbiguousJobId(text, found[:MAX_ID_CANDIDATES],
                             more=len(found) > MAX_ID_CANDIDATES)

    def events(self, job_id: str) -> list[Event]:
        """GET /jobs/{id}/events: every state change, oldest first (all pages)."""
        return self._every_page(EventList, f"/jobs/{_segment(job_id)}/events")

    def placement(self, job_id: str) -> PlacementOut:
        """GET /jobs/{id}/placement: the routing decision that placed the job, as made."""
        return self._document(PlacementOut, "GET", f"/jobs/{_segment(job_id)}/placement")

    def audit_verify(self) -> AuditVerifyOut:
        """GET /audit/verify: the hash chain's first broken link, if any, and the ledger's
        problems (auditors and admins)."""
        return self._document(AuditVerifyOut, "GET", "/audit/verify")

    def audit_job(self, job_id: str) -> JobStoryOut:
        """GET /audit/jobs/{id}: the job's story from request to charge."""
        return self._document(JobStoryOut, "GET", f"/audit/jobs/{_segment(job_id)}")

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
        response = self._request("GET", f"/jobs/{_segment(job_id)}/logs/{stream}",
                                 params=params)
        data = response.content
        size = _int_header(response, "X-Output-Size", (offset or 0) + len(data))
        if offset is not None:
            start = offset
        else:  # a tail ends at the size reported with it; no parameters: from 0
            start = max(0, size - len(data)) if tail is not None else 0
        return Output(data=data, offset=start, size=size)

    def follow(self, job_id: str, stream: Stream = "stdout", *, offset: int = 0,
               tail: int | None = None, reconnects: int = 5) -> Iterator[bytes]:
        """Stream the job's output as it is written, until the job is final and all
        output was sent. A dropped connection is resumed from the last byte received."""
        path = f"/jobs/{_segment(job_id)}/logs/{stream}"
        position = offset
        if tail is not None:
            first = self.output(job_id, stream, tail=tail)
            if first.data:
                yield first.data
            position = first.offset + len(first.data)
        failures = 0
        ended: str | None = None  # why the last stream stopped before the job's end
        while True:
            try:
                with self._stream("GET", path, params={"follow": "true", "offset": position}) \
                        as response:
                    for chunk in response.iter_bytes():
                        position += len(chunk)
                        failures = 0
                        yield chunk
                # The gateway ends a follow when the job is over, or early when it stops
                # (gateway.api.stopping): then it is resumed, like a dropped connection.
                ended = "the gateway ended the stream before the job ended"
                if is_final(self.get_job(job_id)):
                    return
            except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
                ended = f"the connection to the gateway broke ({transport_reason(exc)})"
            except GatewayUnreachable as exc:
                if ended is None:  # the first request: no stream to resume
                    raise
                if failures >= reconnects:
                    raise StreamEnded(self.base_url, job_id, stream, ended, exc.reason) \
                        from exc
            failures += 1
            time.sleep(min(2.0 ** failures / 4, 5.0))

    def wait(self, job_id: str, *, poll_seconds: float = 1.0, timeout: float | None = None,
             on_update: Callable[[Job], None] | None = None) -> Job:
        """Poll until the job is final (or `timeout` seconds pass); returns the last view."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = min(0.2, poll_seconds)
        while True:
            job = self.get_job(job_id)
            if on_update is not None:
                on_update(job)
            if is_final(job) or (deadline is not None and time.monotonic() >= deadline):
                return job
            time.sleep(delay)
            # Start quick (short jobs end fast), back off to poll_seconds.
            delay = min(poll_seconds, delay * 2)

    # -- job files (gateway.client.downloads.fetch_outputs drives these) -----------------

    def job_outputs(self, job_id: str) -> list[JobOutput]:
        """GET /jobs/{id}/outputs: the job's collected outputs."""
        return self._every_page(JobOutputList, f"/jobs/{_segment(job_id)}/outputs")

    def open_job_output(self, job_id: str, path: str, *, offset: int = 0) -> _StreamContext:
        """GET /jobs/{id}/outputs/{path} from byte `offset` (a Range): use with `with`, then
        iterate the response's bytes."""
        quoted = "/".join(quote(part, safe="") for part in path.split("/"))
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        return self._stream("GET", f"/jobs/{_segment(job_id)}/outputs/{quoted}",
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
        return self._document(Upload, "GET", f"/uploads/{_segment(upload_id)}")

    def list_uploads(self) -> list[Upload]:
        """GET /uploads: your uploads, newest first (all pages)."""
        return self._every_page(UploadList, "/uploads")

    def put_chunk(self, upload_id: str, data: bytes, start: int, total: int) -> Upload:
        """PUT one chunk at byte `start` of a `total`-byte file. A ConflictError's
        `problem["offset"]` says where the gateway wants the next chunk to start."""
        headers = {"Content-Range": f"bytes {start}-{start + len(data) - 1}/{total}",
                   "Content-Type": "application/octet-stream"}
        return self._document(Upload, "PUT", f"/uploads/{_segment(upload_id)}",
                              content=data, headers=headers)

    def complete_upload(self, upload_id: str, sha256: str | None = None) -> Upload:
        """POST /uploads/{id}/complete: the gateway verifies size and sha256."""
        body = {"sha256": sha256} if sha256 is not None else {}
        return self._document(Upload, "POST", f"/uploads/{_segment(upload_id)}/complete",
                              json=body)

    def delete_job_outputs(self, job_id: str) -> None:
        """DELETE /jobs/{id}/outputs: drop the job's outputs held in the gateway store."""
        self._request("DELETE", f"/jobs/{_segment(job_id)}/outputs")

    def delete_upload(self, upload_id: str) -> None:
        """DELETE /uploads/{id}."""
        self._request("DELETE", f"/uploads/{_segment(upload_id)}")

    # -- sites and system ---------------------------------------------------------------

    def sites(self) -> list[Site]:
        """GET /sites."""
        return self._every_page(SiteList, "/sites")

    def me(self) -> MeOut:
        """GET /me: who the token says you are, its scopes and your roles."""
        return self._document(MeOut, "GET", "/me")

    # -- projects, allocations and balances --------------------------------------------

    def projects(self) -> list[ProjectSummaryOut]:
        """GET /projects: the projects you may read, with your standing in each."""
        return self._every_page(ProjectList, "/projects")

    def project(self, name: str) -> ProjectOut:
        """GET /projects/{name}: members and allocations (404 unless you may read it)."""
        return self._document(ProjectOut, "GET", f"/projects/{_name(name)}")

    def create_project(self, name: str, description: str | None = None) -> ProjectOut:
        """POST /projects (administrators)."""
        body = {"name": name, **({"description": description} if description else {})}
        return self._document(ProjectOut, "POST", "/projects", json=body)

    def add_member(self, project: str, user: str, *, pi: bool = False) -> MemberOut:
        """POST /projects/{name}/members: add `user` (or change their role)."""
        return self._document(MemberOut, "POST", f"/projects/{_name(project)}/members",
                              json={"user": user, "pi": pi})

    def remove_member(self, project: str, user: str) -> None:
        """DELETE /projects/{name}/members/{user}."""
        self._request("DELETE", f"/projects/{_name(project)}/members/{_name(user)}")

    def balance(self, project: str) -> BalanceOut:
        """GET /projects/{name}/balance: per allocation awarded, used, held, available."""
        return self._document(BalanceOut, "GET", f"/projects/{_name(project)}/balance")

    def allocations(self, project: str | None = None) -> list[AllocationOut]:
        """GET /allocations: of `project`, or of every project you may read."""
        params = {"project": project} if project is not None else {}
        return self._every_page(AllocationList, "/allocations", params)

    def grant(self, project: str, pool: str, amount: Amount, ends_at: datetime, reason: str,
              *, starts_at: datetime | None = None, credit_limit: Amount | None = None
              ) -> AllocationOut:
        """POST /allocations (administrators): grant `amount` SU at `pool` (a site or *)."""
        body: dict[str, Any] = {"project": project, "pool": pool, "amount": str(amount),
                                "ends_at": ends_at.isoformat(), "reason": reason}
        if starts_at is not None:
            body["starts_at"] = starts_at.isoformat()
        if credit_limit is not None:
            body["credit_limit"] = str(credit_limit)
        return self._document(AllocationOut, "POST", "/allocations", json=body)

    def adjust(self, allocation_id: int, amount: Amount, reason: str) -> AllocationOut:
        """POST /allocations/{id}:adjust: add SU (negative: take back)."""
        return self._document(AllocationOut, "POST", f"/allocations/{int(allocation_id)}:adjust",
                              json={"amount": str(amount), "reason": reason})

    def transfer(self, source: int, target: int, amount: Amount, reason: str) -> TransferOut:
        """POST /allocations:transfer: move SU from one allocation to another."""
        return self._document(TransferOut, "POST", "/allocations:transfer",
                              json={"source": source, "target": target, "amount": str(amount),
                                    "reason": reason})

    def set_allocation_status(self, allocation_id: int, action: Literal["suspend", "resume"],
                              reason: str) -> AllocationOut:
        """POST /allocations/{id}:suspend or :resume."""
        return self._document(AllocationOut, "POST",
                              f"/allocations/{int(allocation_id)}:{action}",
                              json={"reason": reason})

    def health(self) -> Health:
        """GET /health (no token needed)."""
        return self._document(Health, "GET", "/health", auth=None)

    def report(self, kind: ReportKind, params: Sequence[tuple[str, str]] = ()) -> Any:
        """GET /reports/{kind} (allocations, usage, waits, adjustments) as its document."""
        return self._document(REPORT_DOCUMENTS[kind], "GET", f"/reports/{kind}",
                              params=list(params))

    def report_csv(self, kind: ReportKind | Literal["usage-jobs"],
                   params: Sequence[tuple[str, str]] = ()) -> str:
        """The same report as CSV text (`usage-jobs`: GET /usage)."""
        path = "/usage" if kind == "usage-jobs" else f"/reports/{kind}"
        return self._request("GET", path, params=[*params, ("format", "csv")]).text

    def usage(self, params: Sequence[tuple[str, str]] = ()) -> JobUsageList:
        """GET /usage: your jobs (a PI's `project`: the project's) with elapsed time,
        cores and charge."""
        return self._document(JobUsageList, "GET", "/usage", params=list(params))

    def job_spec_schema(self) -> dict[str, Any]:
        """GET /schemas/job-spec: the JSON Schema of a job request."""
        return cast(dict[str, Any], self._json("GET", "/schemas/job-spec", auth=None))

    # -- plumbing -----------------------------------------------------------------------

    def _document(self, document: type[Document], method: str, path: str,
                  **kwargs: Any) -> Document:
        """The response, validated as the API's `document` (`gateway.schemas`)."""
        body = self._json(method, path, **kwargs)
        try:
            return cast(Document, parse(document, body))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the document"
            raise ClientError(
                f"The gateway's answer to {method} {path} does not match this client's "
                f"{document.__name__} ({where}: {first['msg']}); are the client and the "
                "gateway of the same version?") from exc

    def _every_page(self, document: type[Document], path: str,
                    filters: Mapping[str, str] | None = None) -> list[Any]:
        """The items of every page of a list (each is `{items, next_cursor}`)."""
        items: list[Any] = []
        params: dict[str, str | int] = {**(filters or {}), "limit": PAGE_SIZE}
        while True:
            page = cast(dict[str, Any], self._document(document, "GET", path, params=params))
            items += page["items"]
            if not page["next_cursor"]:
                return items
            params["cursor"] = page["next_cursor"]

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise ClientError(f"The gateway sent a response that is not JSON for {path}.") \
                from exc

    def _request(self, method: str, path: str, *, auth: Any = httpx.USE_CLIENT_DEFAULT,
                 **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, auth=auth, **kwargs)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self.base_url, transport_reason(exc)) from exc
        _raise_for_problem(response, self.base_url)
        return response

    def _stream(self, method: str, path: str, **kwargs: Any) -> _StreamContext:
        return _StreamContext(self, method, path, kwargs)


class _StreamContext:
    """`with` a streaming response whose errors are already mapped."""

    def __init__(self, client: GatewayClient, method: str, path: str,
                 kwargs: dict[str, Any]) -> None:
        self._client = client
        self._method = method
        self._path = path
        self._kwargs = kwargs
        self._response: httpx.Response | None = None

    def __enter__(self) -> httpx.Response:
        http = self._client._http
        request = http.build_request(self._method, self._path, timeout=httpx.Timeout(
            http.timeout.connect, read=None, write=http.timeout.write, pool=http.timeout.pool),
            **self._kwargs)
        try:
            response = http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self._client.base_url, transport_reason(exc)) from exc
        self._response = response
        if response.is_error:
            response.read()
            response.close()
            _raise_for_problem(response, self._client.base_url)
        return response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()


def _raise_for_problem(response: httpx.Response, gateway: str) -> None:
    if response.is_success:
        return
    if not response.is_error:
        # 1xx/3xx are not expected from this API; treat as a problem too.
        raise problem_error(response.status_code, None, response.text)
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if response.status_code in (404, 405) and not kind.endswith("json"):
        # Every error of a gridgate gateway is a problem document: this is another server.
        raise problem_error(response.status_code, {"title": "Not a gridgate gateway", "detail": (
            f"{response.request.url} answered {response.status_code} with "
            f"{kind or 'no content type'}, not a gridgate problem document: the gateway "
            "URL (--gateway or GRIDGATE_URL) points at another web server.")})
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if response.status_code == 401:
        detail = body.get("detail") if isinstance(body, dict) else None
        text = "The gateway did not accept your token"
        if isinstance(detail, str) and detail:
            text += f": {detail}"
        if "gridgate login" not in text:
            text += "; run 'gridgate login'"
        text = name_gateway(text, gateway)
        raise AuthenticationRequired(text if text.endswith(".") else text + ".")
    raise problem_error(response.status_code, body, response.text)


def _plain_http_transport(base_url: str) -> httpx.BaseTransport | None:
    """For an http:// gateway, a transport that skips loading the CA bundle (httpx loads it
    for every client: a third of a CLI command's start-up). TLS stays verified: its context
    trusts no authority, so an https connection would be refused, never trusted."""
    if not base_url.lower().startswith("http://"):
        return None
    return httpx.HTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


def _is_job_id(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _segment(value: str) -> str:
    # A job id is one path segment: never let user input add or climb segments.
    if not value or "/" in value or value in (".", ".."):
        raise ClientError(f"{value!r} is not a job id.")
    return value


def _name(value: str) -> str:
    # A project or user name is one path segment, quoted: never a way to climb the path.
    if not value or "/" in value or value in (".", ".."):
        raise ClientError(f"{value!r} is not a project or user name.")
    return quote(value, safe="~")


def _int_header(response: httpx.Response, name: str, default: int) -> int:
    try:
        return int(response.headers[name])
    except (KeyError, ValueError):
        return default

