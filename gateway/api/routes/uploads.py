"""/api/v1/uploads: chunked, resumable uploads to the gateway store.

    POST   /uploads                 {name, size, sha256?} -> 201, Location
    PUT    /uploads/{id}            Content-Range: bytes a-b/total, the chunk as the body
    HEAD   /uploads/{id}            Upload-Offset: where to resume
    GET    /uploads/{id}            the upload (offset included)
    POST   /uploads/{id}/complete   {sha256} -> verified, stored by content
    GET    /uploads                 your uploads
    DELETE /uploads/{id}

A chunk must start at the offset the gateway holds (else 409 with `offset` in the
body and an `Upload-Offset` header); its body must be exactly the range. Bodies are
streamed to disk, never held whole; chunk PUTs are exempt from the general body
limit and capped by `upload_chunk_max_bytes` instead. See gateway.services.data.uploads
for the rules on resets, expiry and quotas.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Header, Request, Response
from pydantic import BaseModel, BeforeValidator, Field
from pydantic.config import JsonDict
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.problems import problem
from gateway.api.upload_schemas import UploadList, UploadOut, upload_out
from gateway.db.base import utcnow
from gateway.domain.errors import Conflict, Invalid, TooLarge
from gateway.runtime import Runtime
from gateway.schemas import to_json
from gateway.services.data import uploads as service
from gateway.services.data.uploads import OffsetMismatch, UploadLimits
from gateway.store import BlobStore, PartWriter

router = APIRouter(prefix="/api/v1", tags=["uploads"])

_CHUNK_PATH = re.compile(r"/api/v1/uploads/[^/]+")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
# Body pieces are gathered to this size before a (thread-pool) write.
WRITE_BLOCK = 1024 * 1024


def is_chunk_put(scope: Scope) -> bool:
    """True for a chunk PUT, which the general body-size limit must let through."""
    return scope.get("method") == "PUT" and bool(_CHUNK_PATH.fullmatch(scope.get("path", "")))


# The rules gateway.services.data.uploads enforces (with its own messages), told to clients in
# the OpenAPI document.
SHA256: JsonDict = {"pattern": "^[0-9a-fA-F]{64}$"}
FILE_NAME: JsonDict = {"pattern": r"^[^/\u0000-\u001f]+$"}


def _not_bool(value: object) -> object:
    # JSON true is no size (pydantic would read it as 1).
    if isinstance(value, bool):
        raise ValueError("give the size in bytes, a whole number")
    return value


class UploadCreate(BaseModel):
    name: str = Field(min_length=1, max_length=255, json_schema_extra=FILE_NAME)
    size: Annotated[int, BeforeValidator(_not_bool)] = Field(ge=0)
    sha256: str | None = Field(default=None, min_length=64, max_length=64,
                               json_schema_extra=SHA256)


class UploadComplete(BaseModel):
    sha256: str | None = Field(default=None, min_length=64, max_length=64,
                               json_schema_extra=SHA256)


def store_of(runtime: Runtime) -> BlobStore:
    return BlobStore(runtime.settings.store_dir)


def _with_offset(upload: UploadOut, status: int = 200,
                 headers: dict[str, str] | None = None) -> Response:
    return Response(to_json(UploadOut, upload), status_code=status,
                    media_type="application/json",
                    headers={"Upload-Offset": str(upload["offset"]),
                             "Upload-Length": str(upload["size"]), **(headers or {})})


def _offset_problem(request: Request, exc: OffsetMismatch) -> Response:
    return problem(409, exc.detail, title=exc.title, instance=request.url.path,
                   headers={"Upload-Offset": str(exc.offset)}, offset=exc.offset)


@router.post("/uploads", status_code=201, response_model=UploadOut)
def create_upload(body: UploadCreate, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Start an upload; 413 up front when it would exceed the file limit or your quota."""
    with runtime.unit_of_work() as session:
        upload = service.create_upload(session, store_of(runtime),
                                       UploadLimits.from_settings(runtime.settings),
                                       principal.user_id, body.name, body.size, body.sha256,
                                       utcnow())
    return _with_offset(upload_out(upload), 201,
                        {"Location": f"/api/v1/uploads/{upload.id}"})


@router.get("/uploads", response_model=UploadList)
def list_uploads(principal: JobsReader, runtime: RuntimeDep, limit: Limit = DEFAULT_LIMIT,
                 cursor: Cursor = None) -> UploadList:
    """Your uploads, newest first; follow `next_cursor` for the next page."""
    with runtime.readers() as session:
        page = service.list_uploads(session, principal.user_id, limit=limit, cursor=cursor)
        return UploadList(items=[upload_out(u) for u in page.rows],
                          next_cursor=page.next_cursor)


@router.get("/uploads/{upload_id}", response_model=UploadOut)
def get_upload(upload_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """The upload; `offset` is where a client resumes."""
    with runtime.readers() as session:
        return _with_offset(upload_out(
            service.get_upload(session, principal.user_id, upload_id)))


@router.head("/uploads/{upload_id}", response_class=Response)
def upload_offset(upload_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """Just the `Upload-Offset` (and `Upload-Length`) headers."""
    with runtime.readers() as session:
        upload = service.get_upload(session, principal.user_id, upload_id)
    return Response(headers={"Upload-Offset": str(upload.bytes_received),
                             "Upload-Length": str(upload.size), "Upload-State": upload.state})


@router.delete("/uploads/{upload_id}", status_code=204, response_class=Response)
def delete_upload(upload_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Delete the upload and free its quota."""
    with runtime.unit_of_work() as session:
        cleanup = service.delete_upload(session, principal.user_id, upload_id)
    # Only once the deletion is committed: the files are data until then.
    with runtime.readers() as session:
        service.clean_store(session, store_of(runtime), cleanup)
    return Response(status_code=204)


@router.post("/uploads/{upload_id}/complete", response_model=UploadOut)
def complete_upload(upload_id: str, body: UploadComplete, principal: JobsWriter,
                    runtime: RuntimeDep, request: Request) -> Response:
    """Verify size and sha256 of what the gateway holds and store it by content. On a
    mismatch (422) the upload is reset to offset 0 and stays open."""
    try:
        with runtime.unit_of_work() as session:
            done = service.complete_upload(session, store_of(runtime), principal.user_id,
                                           upload_id, body.sha256, utcnow())
    except OffsetMismatch as exc:
        return _offset_problem(request, exc)
    # The reset is committed; only now is the mismatch reported.
    if done.mismatch is not None:
        raise Invalid(done.mismatch, field="sha256", offset=0)
    return _with_offset(upload_out(done.upload))


def parse_content_range(value: str) -> tuple[int, int, int]:
    """`bytes a-b/total` -> (start, end exclusive, total)."""
    match = _CONTENT_RANGE.fullmatch(value.strip())
    if not match:
        raise Invalid("Send the chunk's place as 'Content-Range: bytes FIRST-LAST/TOTAL' "
                      "(LAST inclusive).", field="Content-Range")
    first, last, total = (int(g) for g in match.groups())
    if last < first or last >= total:
        raise Invalid(f"Content-Range {value!r} is not a range inside a file of {total} "
                      "bytes.", field="Content-Range")
    return first, last + 1, total


def _check_open(runtime: Runtime, owner_id: str, upload_id: str, start: int, total: int
                ) -> None:
    with runtime.readers() as session:
        service.ensure_writable(service.get_upload(session, owner_id, upload_id), start, total)


def _record(runtime: Runtime, upload_id: str, start: int, end: int) -> UploadOut:
    with runtime.unit_of_work() as session:
        if not service.record_chunk(session, upload_id, start, end, utcnow(),
                                    runtime.settings.upload_ttl_seconds):
            raise Conflict("The upload changed while this chunk was written (deleted, "
                           "expired or written by another request); ask for its offset.")
        return upload_out(service.uploaded(session, upload_id))


@router.put("/uploads/{upload_id}", response_model=UploadOut)
async def put_chunk(
    upload_id: str,
    request: Request,
    principal: JobsWriter,
    runtime: RuntimeDep,
    # The pattern is parse_content_range's (which words the error), told to clients.
    content_range: Annotated[str, Header(
        max_length=64, description="bytes FIRST-LAST/TOTAL (LAST inclusive)",
        json_schema_extra={"pattern": r"^bytes \d+-\d+/\d+$"})],
) -> Response:
    """Write one chunk. It must start at the current offset; the body must be exactly
    the range. A dropped connection keeps the bytes that arrived."""
    start, end, total = parse_content_range(content_range)
    length = end - start
    limit = runtime.settings.upload_chunk_max_bytes
    if length > limit:
        raise TooLarge(f"A chunk may carry at most {limit} bytes; this one declares "
                       f"{length}, {length - limit} too many. Send smaller chunks.",
                       limit="upload_chunk_max_bytes", limit_bytes=limit,
                       excess_bytes=length - limit)
    # Content-Length is HTTP's own header (not an API parameter); the server checked it.
    declared = request.headers.get("content-length")
    content_length = int(declared) if declared and declared.isdigit() else None
    if content_length is not None and content_length != length:
        raise Invalid(f"The body has {content_length} bytes but Content-Range covers "
                      f"{length}.", field="Content-Length")
    user = principal.user_id
    try:
        await run_in_threadpool(_check_open, runtime, user, upload_id, start, total)
        writer = PartWriter(store_of(runtime), upload_id)
        await run_in_threadpool(writer.__enter__)
        try:
            # Checked again under the lock: another request may just have moved it.
            await run_in_threadpool(_check_open, runtime, user, upload_id, start, total)
            await run_in_threadpool(writer.begin, start)
            if not await _receive(request, writer, length):
                # The client went away: keep what arrived, nobody reads this answer.
                if writer.written:
                    await run_in_threadpool(writer.commit)
                    await run_in_threadpool(_record, runtime, upload_id, start,
                                            start + writer.written)
                return Response(status_code=400)
            await run_in_threadpool(writer.commit)
            out = await run_in_threadpool(_record, runtime, upload_id, start, end)
        finally:
            await run_in_threadpool(writer.__exit__, None, None, None)
    except OffsetMismatch as exc:
        return _offset_problem(request, exc)
    return _with_offset(out)


async def _receive(request: Request, writer: PartWriter, length: int) -> bool:
    """Stream the body into `writer`; False when the client disconnected."""
    pending = bytearray()
    received = 0
    connected = True
    try:
        async for piece in request.stream():
            received += len(piece)
            if received > length:
                raise Invalid(f"The body is longer than the {length} bytes Content-Range "
                              "covers.", field="Content-Range")
            pending += piece
            if len(pending) >= WRITE_BLOCK:
                await run_in_threadpool(writer.write, bytes(pending))
                pending.clear()
    except ClientDisconnect:
        connected = False
    if pending:
        await run_in_threadpool(writer.write, bytes(pending))
    if connected and received != length:
        raise Invalid(f"The body has {received} bytes but Content-Range covers {length}; "
                      "nothing of it was kept.", field="Content-Range")
    return connected
