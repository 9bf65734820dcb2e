"""Sites and the gateway's health, as the API sends them."""

from __future__ import annotations

from typing_extensions import TypedDict


class SiteOut(TypedDict):
    """A site the gateway can submit to, with its shape and current status."""

    name: str
    kind: str
    description: str
    enabled: bool
    drained: bool
    status: str
    status_reason: str | None
    max_nodes: int
    cores_per_node: int
    memory_mb_per_node: int | None
    max_walltime_seconds: int
    mpi_launchers: list[str]
    mpi_flavors: list[str]
    max_jobs: int
    # The local site: "sandbox" (each job confined) or "none" (jobs run as the gateway's
    # account; only that account may submit); null on other sites.
    isolation: str | None


class SiteList(TypedDict):
    items: list[SiteOut]


class Health(TypedDict):
    status: str
    database: str
    version: str
