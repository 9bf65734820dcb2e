"""Sites and the gateway's health, as the API sends them."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict


class ProbeOut(TypedDict):
    """The predicted queue wait of a probe job (`nodes` whole nodes for `walltime`
    seconds) submitted at the snapshot, by the forecaster that routes jobs. Seconds;
    null when the site is too small for it."""

    nodes: int
    walltime: int
    wait_median: float | None
    wait_bound: float | None  # 95% upper bound
    basis: str  # where the wait came from (observed waits, the live queue)


class SiteLoadOut(TypedDict):
    """How busy a site was at its last queue snapshot (taken by a routing pass while
    jobs wait for a site). Jobs are those the scheduler lets the gateway see: every
    user's where it lists the whole queue. Cores: null when the scheduler did not say."""

    taken_at: datetime
    queued_jobs: int
    running_jobs: int
    free_cores: int | None
    total_cores: int | None
    probe: ProbeOut


class SiteOut(TypedDict):
    """A site the gateway can submit to, with its shape and current state."""

    name: str
    kind: str
    description: str
    enabled: bool
    drained: bool
    state: str  # up, down or unknown: as the worker last reached it
    reason: str | None
    max_nodes: int
    cores_per_node: int
    memory_mb_per_node: int | None
    # Node-local scratch disk a job may ask for (resources.scratch_mb); null: none.
    scratch_mb_per_node: int | None
    max_walltime: int
    mpi_launchers: list[str]
    mpi_flavors: list[str]
    # Qualities of service a job may name here (`qos`).
    qos: list[str]
    max_jobs: int
    # The local site: "sandbox" (each job confined) or "none" (jobs run as the gateway's
    # account; only that account may submit); null on other sites.
    isolation: str | None
    # Live load from the last queue snapshot; null until a routing pass took one.
    load: SiteLoadOut | None
    # Why routing leaves the site out now as a black hole (jobs of several users failed
    # in a row with signs of the site), and until when; null when it does not. A job
    # naming the site still runs there; `gridgate admin site unban` lifts the ban.
    routing_ban: str | None
    routing_ban_until: datetime | None


class SiteList(TypedDict):
    """A page of sites; `next_cursor` asks for the next one."""

    items: list[SiteOut]
    next_cursor: str | None


class Health(TypedDict):
    status: str
    database: str
    version: str
