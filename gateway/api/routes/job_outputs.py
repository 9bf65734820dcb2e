"""/api/v1/jobs/{id}/outputs: a job's collected outputs, listed and downloaded.

    GET /jobs/{id}/outputs          path, size, sha256 and location of each output
    GET /jobs/{id}/outputs/{path}   the bytes: Range (one range) supported, served as an
                                    attachment with nosniff; `Repr-Digest` carries the
                                    sha256 of the whole file (RFC 9530)
    DELETE /jobs/{id}/outputs       drop the outputs fetched into the gateway store (they
                                    count against the owner's store quota)

Fetched outputs come from the gateway store; kept ones are streamed from the site
through the gateway. Another user's job is 404, as on every job route.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import IO
from urllib.parse import quote

from fastapi import APIRouter, Header, Request, Response
from fastapi.responses import StreamingResponse

from adapters.transfer import SiteFile
from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.http.ranges import Unsatisfiable, parse_range
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.problems import problem
from gateway.domain.errors import Invalid, Unavailable
from gateway.domain.staging import IN_STORE
from gateway.repositories.jobs.queries import OutputView
from gateway.runtime import Runtime
from gateway.schemas.jobs import JobOutputList, JobOutputOut
from gateway.services.data.uploads import clean_store
from gateway.services.jobs import outputs as job_outputs
from gateway.store import BlobStore

router = APIRouter(prefix="/api/v1", tags=["jobs"])

SEND_BLOCK = 256 * 1024


@router.get("/jobs/{job_id}/outputs", response_model=JobOutputList)
def list_outputs(job_id: str, principal: JobsReader, runtime: RuntimeDep,
               limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> JobOutputList:
    """The job's outputs (matched by its output globs after the run), by path; follow
    `next_cursor` for the next page."""
    with runtime.reading() as conn:
        page = job_outputs.list_outputs(conn, principal, job_id, limit=limit, cursor=cursor)
    return JobOutputList(items=[JobOutputOut(path=r["path"], size=r["size"], sha256=r["sha256"],
                                         location=r["location"], site=r["site_name"])
                              for r in page.rows], next_cursor=page.next_cursor)


@router.delete("/jobs/{job_id}/outputs", status_code=204, response_class=Response)
def delete_outputs(job_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Remove the job's outputs held in the gateway store and free their quota (outputs
    kept on the site stay listed)."""
    with runtime.unit_of_work() as session:
        cleanup = job_outputs.delete_fetched(session, principal, job_id)
    # Only once the deletion is committed: the blobs are data until then.
    with runtime.readers() as session:
        clean_store(session, BlobStore(runtime.settings.store_dir), cleanup)
    return Response(status_code=204)


@router.get("/jobs/{job_id}/outputs/{path:path}", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}}},
                       206: {"description": "Partial content (Range)"},
                       416: {"description": "Range not satisfiable"}})
def download_output(job_id: str, path: str, principal: JobsReader, runtime: RuntimeDep,
                  request: Request, range_: str | None = Header(None, alias="Range")
                  ) -> Response:
    """One output's bytes (all, or one `Range`)."""
    with runtime.reading() as conn:
        row = job_outputs.get_output(conn, principal, job_id, path)
        owner = job_outputs.owner_username(conn, job_id)
    size = int(row["size"])
    headers = {
        "Content-Disposition": _attachment(path),
        "X-Content-Type-Options": "nosniff",
        "Accept-Ranges": "bytes",
        "ETag": f'"{row["sha256"]}"',
        "Repr-Digest": f"sha-256=:{base64.b64encode(bytes.fromhex(row['sha256'])).decode()}:",
        "Cache-Control": "private, no-store",
    }
    try:
        wanted = parse_range(range_, size)
    except Unsatisfiable:
        return problem(416, f"The range {range_!r} lies outside the file's {size} bytes.",
                       instance=request.url.path, headers={"Content-Range": f"bytes */{size}"})
    start, end = wanted or (0, size)
    status = 200
    if wanted is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
    headers["Content-Length"] = str(end - start)
    stream = _open(runtime, row, owner, start)
    return StreamingResponse(_send(stream, end - start), status_code=status,
                             media_type="application/octet-stream", headers=headers)


def _attachment(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\;' else "_"
                       for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def _open(runtime: Runtime, row: OutputView, owner: str | None,
          offset: int) -> contextlib.AbstractContextManager[IO[bytes]]:
    if row["location"] == IN_STORE:
        blob = BlobStore(runtime.settings.store_dir).open_blob(row["sha256"])
        blob.seek(offset)
        return blob
    try:
        files = runtime.sites.get(row["site_name"]).adapter_for(owner).files
    except Invalid as exc:  # the site left the config, or no longer maps the owner
        raise Unavailable(f"Cannot reach site '{row['site_name']}' for this output: "
                          f"{exc.detail} Try again later.") from exc
    return SiteFile(files, row["site_path"], int(row["size"])).open_at(offset)


def _send(stream: contextlib.AbstractContextManager[IO[bytes]], length: int) -> Iterator[bytes]:
    with stream as src:
        left = length
        while left > 0:
            block = src.read(min(SEND_BLOCK, left))
            if not block:
                return
            left -= len(block)
            yield block
