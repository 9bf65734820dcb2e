"""Where a job's stdout and stderr are now and how to read them: its newest attempt's
site and directory, read through that site's adapter as the account that ran it (on a
mapped site only it can open the files). Adapter errors propagate (the API turns them
into problem documents: 503 when the site is unreachable)."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import OutputChunk, OutputStream
from gateway.domain.states import JobState
from gateway.runtime import Runtime
from gateway.services.jobs import queries as job_queries


@dataclass(frozen=True)
class OutputSource:
    """Where the (existing, already authorized) job's output is now (no site nor
    directory before its first attempt), and whether the job has ended."""

    final: bool
    site_name: str | None
    workdir: str | None
    owner: str | None


def output_source(runtime: Runtime, job_id: str) -> OutputSource:
    """The job's output as it stands now."""
    with runtime.reading() as conn:
        place = job_queries.output_place(conn, job_id)
    return OutputSource(JobState(place.state).is_final, place.site_name, place.workdir,
                        place.owner)


def read_output(runtime: Runtime, source: OutputSource, stream: OutputStream, offset: int,
                limit: int) -> OutputChunk:
    """Up to `limit` bytes of `stream` from `offset` (nothing before the first attempt)."""
    if source.site_name is None or source.workdir is None:
        return OutputChunk(b"", offset, None)
    adapter = runtime.sites.get(source.site_name).adapter_for(source.owner)
    return adapter.read_output(source.workdir, stream, offset, limit)


def output_tail(runtime: Runtime, source: OutputSource, stream: OutputStream, tail: int,
                limit: int | None = None) -> tuple[int, OutputChunk]:
    """The last `tail` bytes of `stream` (at most `limit` of them, from the first), and
    where they start."""
    size = read_output(runtime, source, stream, 0, 0).size or 0
    start = max(0, size - tail)
    return start, read_output(runtime, source, stream, start, tail if limit is None else limit)
