"""A TES task's `resources` as the job spec's fields (pure).

TES asks for cores, memory and disk of one machine; gridgate's spec asks for ranks,
threads, memory and node-local scratch per node. A task is one rank on one node with
`cpu_cores` threads, `ram_gb` of memory and `disk_gb` of scratch (only sites that
declare their nodes' scratch run it). What TES cannot say comes in
`backend_parameters`, the keys of `BACKEND_PARAMETERS` (advertised by service-info);
with `backend_parameters_strict`, a key gridgate does not know is refused, as the
specification asks, else it is ignored.
A `ram_gb` or `disk_gb` of 0 asks for none (the site's default).
`zones` name the sites the task may run at, or zones sites declare (`routing.zones` of
the spec: the routing policy chooses among them). `preemptible` is ignored: it allows
preemption, and a batch job that is never preempted is what it allows too.
"""

from __future__ import annotations

import math
from typing import Any

from gateway.api.tes.task_model import TesResources
from gateway.domain.errors import Invalid

# backend_parameters gridgate reads, and the job spec field each one sets.
BACKEND_PARAMETERS = {
    "site": "site",
    "project": "project",
    "partition": "partition",
    "qos": "qos",
    "walltime": "resources.walltime",
    "routing": "routing.policy",
}
# TES sizes are in gigabytes (10^9 bytes); the spec's memory is in MiB per node.
GB_IN_MIB = 1e9 / 2**20


def spec_fields(resources: TesResources | None) -> dict[str, Any]:
    """The job spec's fields for a TES `resources` object (None: the defaults)."""
    if resources is None:
        return {}
    wanted: dict[str, Any] = {}
    if resources.cpu_cores is not None:
        wanted["threads_per_rank"] = resources.cpu_cores
    # 0 asks for nothing (Snakemake's TES executor sends ceil(mem_mb / 1000), 0 for 0).
    if resources.ram_gb:
        wanted["memory_mb"] = math.ceil(resources.ram_gb * GB_IN_MIB)
    if resources.disk_gb:
        wanted["scratch_mb"] = math.ceil(resources.disk_gb * GB_IN_MIB)
    fields: dict[str, Any] = {}
    parameters = resources.backend_parameters
    unknown = sorted(set(parameters) - set(BACKEND_PARAMETERS))
    if unknown and resources.backend_parameters_strict:
        raise Invalid(
            f"backend_parameters {', '.join(unknown)} are not supported; gridgate reads "
            f"{', '.join(BACKEND_PARAMETERS)}", field="resources.backend_parameters")
    for key, value in parameters.items():
        if key == "walltime":
            wanted["walltime"] = value  # seconds or [D-][HH:]MM:SS, as the spec reads it
        elif key == "routing":
            fields["routing"] = {"policy": value}
        elif key in BACKEND_PARAMETERS:
            fields[key] = value
    if resources.zones:
        if "site" in fields:
            raise Invalid("give resources.zones (where gridgate may route the task) or "
                          "backend_parameters.site (the one site it runs at), not both",
                          field="resources.zones")
        fields.setdefault("routing", {})["zones"] = list(resources.zones)
    if wanted:
        fields["resources"] = wanted
    return fields
