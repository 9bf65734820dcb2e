"""/ga4gh/tes/v1: GA4GH TES 1.1 over gridgate's jobs (service-info, create, list, get,
cancel). A task is a job: the same owner, project, routing, allocation, audit and events,
and `gridgate show` reads it. Errors are the gateway's RFC 9457 problem documents (TES
1.1 defines no error body), so a TES client sees the same messages as every client."""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.convertors import Convertor, register_url_convertor

from adapters.errors import AdapterError
from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.refusals import refusal_recorded
from gateway.api.schemas import job_out
from gateway.api.tes.resources import BACKEND_PARAMETERS
from gateway.api.tes.states import TesState
from gateway.api.tes.task_document import Tails, View, task_document
from gateway.api.tes.task_files import Content
from gateway.api.tes.task_model import TesTask
from gateway.api.tes.task_spec import job_spec
from gateway.db.base import utcnow
from gateway.domain.errors import Invalid
from gateway.domain.job_origin import JobOrigin
from gateway.domain.jobspec import JobSpec
from gateway.domain.principal import Principal
from gateway.domain.staging import parse_source
from gateway.runtime import Runtime
from gateway.services.cursors import MAX_CURSOR, MAX_LIMIT
from gateway.services.data import file_urls
from gateway.services.data.file_urls import FileRoots
from gateway.services.data.input_sources import InputUnavailable, site_directory
from gateway.services.data.uploads import UploadLimits, upload_content, upload_file
from gateway.services.jobs import outputs as job_outputs
from gateway.services.jobs import queries as job_queries
from gateway.services.jobs import submission as job_service
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.jobs.job_output import output_source, output_tail
from gateway.services.jobs.queries import MAX_LABEL_FILTERS, JobFilter
from gateway.services.mail.requests import MailPolicy
from gateway.store.blobs import BlobStore

router = APIRouter(prefix="/ga4gh/tes/v1", tags=["ga4gh-tes"])
TES_VERSION = "1.1.0"
# TES allows pages of up to 2047 tasks; gridgate's pages stop at MAX_LIMIT (a page may be
# shorter than asked: clients follow next_page_token).
MAX_TES_PAGE = 2047
# How much of the end of a task's stdout and stderr its FULL view carries.
TAIL_BYTES = 64 * 1024
# The name of the upload that keeps an input given inline (`content`).
CONTENT_NAME = "tes-input"
# An upload id standing for inline inputs while a task's spec is checked.
UNSTORED = "00000000-0000-4000-8000-000000000000"


class TaskIds(Convertor[str]):
    """A task id in a path: never holds ':', so `/tasks/ID:cancel` is the cancel route
    only (a GET of it is a 405, not a read of a task named "ID:cancel")."""

    regex = "[^/:]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("task_id", TaskIds())


def _json(value: Any) -> Response:
    return Response(json.dumps(value), media_type="application/json")


@router.get("/service-info")
def get_service_info(runtime: RuntimeDep) -> Response:
    """What this TES is: gridgate, its version of TES, the backend parameters it reads,
    and the storage it reaches (its sites). Authentication: bearer tokens (OAuth2)."""
    sites = sorted(entry.name for entry in runtime.sites)
    return _json({
        "id": "org.gridgate.tes",
        "name": "gridgate",
        "type": {"group": "org.ga4gh", "artifact": "tes", "version": TES_VERSION},
        "description": "A federated HPC gateway: tasks are routed to the site where they "
                       "finish first and charged to a project's allocation. Authenticate "
                       "with a bearer token (OAuth 2.0).",
        "organization": {"name": "gridgate", "url": runtime.settings.public_url},
        "documentationUrl": f"{runtime.settings.public_url}/docs",
        "version": TES_VERSION,
        "storage": [f"site://{name}/" for name in sites],
        "tesResources_backend_parameters": list(BACKEND_PARAMETERS),
    })


@router.post("/tasks")
def create_task(task: TesTask, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Create a task: it becomes a job, routed and run like every job."""
    settings = runtime.settings
    store = BlobStore(settings.store_dir)
    limits = UploadLimits.from_settings(settings)

    @functools.cache
    def roots() -> FileRoots:
        # Read once, and only where the admin declared file:// directories.
        return _file_roots(runtime, principal)

    @functools.cache
    def listing(url: str) -> list[str]:
        # Cached: the spec is built twice (checked, then stored), a site listed once.
        if url.startswith("site://"):
            return _site_listing(runtime, principal, url)
        return file_urls.list_files(roots(), url, settings.job_input_max_files)

    def readable(content: Content) -> str:
        if content.url is not None:
            with file_urls.open_file(roots(), content.url):
                pass
        return UNSTORED

    # The owner's file:// directories, bound where the task names one (task_spec).
    shared = tuple(str(d) for d in roots().dirs) if settings.file_url_dirs else ()
    # The whole spec is checked, and its files found readable, before any is stored.
    _checked(job_spec(task, readable, listing, shared))
    with refusal_recorded(runtime, principal), runtime.unit_of_work() as session:

        def keep(content: Content) -> str:
            if content.url is None:
                assert content.data is not None
                return upload_content(session, store, limits, principal.user_id,
                                      CONTENT_NAME, content.data, utcnow()).id
            with file_urls.open_file(roots(), content.url) as source:
                return upload_file(session, store, limits, principal.user_id,
                                   CONTENT_NAME, source, utcnow()).id

        spec = _checked(job_spec(task, keep, listing, shared))
        row, _ = job_service.submit(session, runtime.sites, principal, spec, None,
                                    StagingLimits.from_settings(settings),
                                    charged=settings.allocations_enforced,
                                    max_array_tasks=settings.job_array_max_tasks,
                                    store=store,
                                    mail=MailPolicy.from_settings(settings),
                                    origin=JobOrigin.TES,
                                    origin_document=task.model_dump(mode="json",
                                                                    exclude_none=True))
    return _json({"id": row["id"]})


def _file_roots(runtime: Runtime, principal: Principal) -> FileRoots:
    """The directories the caller's file:// URLs may name."""
    with runtime.sessions() as session:
        return FileRoots.of_user(session, runtime.settings.file_url_dirs, principal.user_id,
                                 principal.account_name)


def _site_listing(runtime: Runtime, principal: Principal, url: str) -> list[str]:
    """The files below a site:// directory, listed as the caller's account at the site."""
    try:
        source = parse_source(url.rstrip("/"))
    except ValueError as exc:
        raise Invalid(f"{url}: {exc}") from None
    assert source.site is not None and source.path is not None
    with runtime.sessions() as session:
        try:
            return site_directory(session, runtime.sites, principal.user_id,
                                  principal.account_name, source.site, source.path,
                                  runtime.settings.job_input_max_files)
        except (InputUnavailable, AdapterError) as exc:
            raise Invalid(str(exc)) from None


def _checked(spec: dict[str, Any]) -> JobSpec:
    try:
        return JobSpec.model_validate(spec)
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None


@router.get("/tasks")
def list_tasks(
    principal: JobsReader,
    runtime: RuntimeDep,
    name_prefix: Annotated[str | None, Query(max_length=255)] = None,
    state: TesState | None = None,
    tag_key: Annotated[list[str], Query()] = [],  # noqa: B006  (FastAPI copies defaults)
    tag_value: Annotated[list[str], Query()] = [],  # noqa: B006
    page_size: Annotated[int, Query(ge=1, le=MAX_TES_PAGE)] = 256,
    page_token: Annotated[str | None, Query(max_length=MAX_CURSOR,
                                            pattern=r"^[A-Za-z0-9_-]+$")] = None,
    view: View = View.MINIMAL,
) -> Response:
    """The caller's tasks (the jobs created through TES), newest first; follow
    `next_page_token`. GET of one task reads any job of the caller's."""
    if len(tag_value) > len(tag_key):
        raise Invalid("each tag_value pairs with the tag_key at its place: give no more "
                      "values than keys", field="tag_value")
    if len(tag_key) > MAX_LABEL_FILTERS:
        raise Invalid(f"at most {MAX_LABEL_FILTERS} tag filters may be given at once",
                      field="tag_key")
    # A key without a value (missing, or empty) matches the tag whatever its value.
    tags = list(zip(tag_key, [*tag_value, *[""] * (len(tag_key) - len(tag_value))],
                    strict=True))
    filters = JobFilter(name_prefix=name_prefix, origin=JobOrigin.TES,
                        labels=tuple((k, v) for k, v in tags if v),
                        label_keys=tuple(k for k, v in tags if not v))
    with runtime.reading() as conn:
        page = job_queries.list_jobs(conn, principal, filters,
                                     limit=min(page_size, MAX_LIMIT), cursor=page_token)
        attempts = job_queries.attempts_of(conn, page.jobs)
        sent = {} if view is View.MINIMAL else job_queries.origin_documents_of(conn, page.jobs)
    tasks = [task_document(job_out(row, attempts[row["id"]]), view, sent=sent.get(row["id"]))
             for row in page.jobs]
    if state is not None:
        # The state filter reads more than the job's state (a cancel asked, the reason):
        # applied to the page, which may then be shorter than asked.
        tasks = [t for t in tasks if t["state"] == state]
    listed: dict[str, Any] = {"tasks": tasks}
    if page.next_cursor is not None:
        listed["next_page_token"] = page.next_cursor
    return _json(listed)


@router.get("/tasks/{task_id:task_id}")
def get_task(task_id: str, principal: JobsReader, runtime: RuntimeDep,
             view: View = View.MINIMAL) -> Response:
    """One task, in the view asked for (FULL: with the ends of its stdout and stderr)."""
    with runtime.reading() as conn:
        row, attempts = job_queries.job_detail(conn, principal, task_id)
        outputs = [] if view is View.MINIMAL or not row["spec"].get("deliver") else [
            (o["path"], o["size"]) for o in job_outputs.list_outputs(
                conn, principal, task_id, limit=runtime.settings.job_output_max_files,
                cursor=None).rows]
        sent = None if view is View.MINIMAL else job_queries.origin_documents_of(
            conn, [row]).get(task_id)
    tails = _tails(runtime, task_id) if view is View.FULL and attempts else None
    return _json(task_document(job_out(row, attempts), view, tails, outputs, sent))


def _tails(runtime: Runtime, task_id: str) -> Tails:
    """The last TAIL_BYTES of the task's stdout and stderr, read from its site now."""
    source = output_source(runtime, task_id)
    try:
        read = [output_tail(runtime, source, stream, TAIL_BYTES)[1].data
                for stream in ("stdout", "stderr")]
    except AdapterError as exc:
        return Tails(unreadable=f"stdout and stderr could not be read from "
                                f"{source.site_name} now: {exc}")
    stdout, stderr = (data.decode("utf-8", "replace") for data in read)
    return Tails(stdout, stderr)


@router.post("/tasks/{task_id:task_id}:cancel")
def cancel_task(task_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Cancel a task: CANCELING until the site confirms, then CANCELED."""
    with runtime.unit_of_work() as session:
        job_service.cancel(session, principal, task_id)
    return _json({})
