"""/api/v1/sites: what the gateway can submit to."""

from __future__ import annotations

from fastapi import APIRouter

from gateway.api.deps import RuntimeDep, SitesReader
from gateway.api.schemas import SiteList, SiteOut
from gateway.services.placement import black_holes
from gateway.services.site_load import load_out

router = APIRouter(prefix="/api/v1", tags=["sites"])


@router.get("/sites", response_model=SiteList)
def list_sites(_: SitesReader, runtime: RuntimeDep) -> SiteList:
    with runtime.readers() as session:
        rows = runtime.sites.rows(session)
        banned = black_holes(session, runtime.sites, runtime.clock())
    items = []
    for entry in runtime.sites:
        row = rows.get(entry.name)
        shape = entry.shape
        items.append(SiteOut(
            name=entry.name, kind=entry.kind, description=entry.description,
            enabled=bool(row and row.enabled), drained=bool(row and row.drained),
            status=row.status if row else "unknown",
            status_reason=row.status_reason if row else None,
            max_nodes=shape.max_nodes, cores_per_node=shape.cores_per_node,
            memory_mb_per_node=shape.memory_mb_per_node,
            max_walltime_seconds=shape.max_walltime_seconds,
            mpi_launchers=sorted(shape.mpi_launchers), mpi_flavors=sorted(shape.mpi_flavors),
            max_jobs=entry.max_jobs, isolation=entry.isolation,
            load=load_out(row.load, row.load_at) if row else None,
            routing_ban=banned.get(entry.name),
        ))
    return SiteList(items=items)

