"""/api/v1/sites: what the gateway can submit to."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter

from gateway.api.deps import RuntimeDep, SitesReader
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.schemas import SiteList, SiteOut
from gateway.services import cursors
from gateway.services.routing.site_bans import black_holes
from gateway.services.routing.site_load import load_out

router = APIRouter(prefix="/api/v1", tags=["sites"])


@router.get("/sites", response_model=SiteList)
def list_sites(_: SitesReader, runtime: RuntimeDep, limit: Limit = DEFAULT_LIMIT,
               cursor: Cursor = None) -> SiteList:
    """The configured sites, in the config's order; follow `next_cursor` for the next
    page."""
    with runtime.readers() as session:
        rows = runtime.sites.rows(session)
        banned = black_holes(session, runtime.sites, runtime.clock())
    items = []
    for entry in runtime.sites:
        row = rows.get(entry.name)
        ban = banned.get(entry.name)
        shape = entry.shape
        items.append(SiteOut(
            name=entry.name, kind=entry.kind, description=entry.description,
            enabled=bool(row and row.enabled), drained=bool(row and row.drained),
            state=row.state if row else "unknown",
            reason=row.reason if row else None,
            max_nodes=shape.max_nodes, cores_per_node=shape.cores_per_node,
            memory_mb_per_node=shape.memory_mb_per_node,
            scratch_mb_per_node=shape.scratch_mb_per_node,
            max_walltime=shape.max_walltime,
            mpi_launchers=sorted(shape.mpi_launchers), mpi_flavors=sorted(shape.mpi_flavors),
            qos=sorted(shape.qos),
            max_jobs=entry.max_jobs, isolation=entry.isolation,
            load=load_out(row.load, row.load_at) if row else None,
            routing_ban=None if ban is None else ban.reason,
            routing_ban_until=None if ban is None else datetime.fromtimestamp(ban.until, UTC),
        ))
    page = cursors.from_list(items, limit, cursor, lambda site: site["name"])
    return SiteList(items=list(page.rows), next_cursor=page.next_cursor)

