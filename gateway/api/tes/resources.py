"""A TES task's `resources` as the job spec's fields (pure).

TES asks for cores, memory and disk of one machine; gridgate's spec asks for ranks,
threads and memory per node. A task is one rank on one node with `cpu_cores` threads
and `ram_gb` of memory. What TES cannot say comes in `backend_parameters`, the keys of
`BACKEND_PARAMETERS` (advertised by service-info); with `backend_parameters_strict`, a
key gridgate does not know is refused, as the specification asks, else it is ignored.
`zones` name the sites the task may run at: one zone pins it there; several are not
expressible yet and are refused. `disk_gb` and `preemptible` have no counterpart in a
batch scheduler's request and are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gateway.domain.errors import Invalid

# backend_parameters gridgate reads, and the job spec field each one sets.
BACKEND_PARAMETERS = {
    "site": "site",
    "project": "project",
    "partition": "partition",
    "walltime": "resources.walltime",
    "routing": "routing.policy",
}
# TES sizes are in gigabytes (10^9 bytes); the spec's memory is in MiB per node.
_GB_IN_MIB = 1e9 / 2**20


def spec_fields(resources: Mapping[str, Any] | None) -> dict[str, Any]:
    """The job spec's fields for a TES `resources` object (None: the defaults)."""
    given = dict(resources or {})
    wanted: dict[str, Any] = {}
    cores = given.get("cpu_cores")
    if cores is not None:
        wanted["threads_per_rank"] = cores
    ram = given.get("ram_gb")
    if ram is not None:
        if ram <= 0:
            raise Invalid(f"resources.ram_gb must be positive, got {ram}",
                          field="resources.ram_gb")
        wanted["memory_mb"] = math.ceil(ram * _GB_IN_MIB)
    fields: dict[str, Any] = {}
    parameters = dict(given.get("backend_parameters") or {})
    unknown = sorted(set(parameters) - set(BACKEND_PARAMETERS))
    if unknown and given.get("backend_parameters_strict"):
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
    zones = list(given.get("zones") or ())
    if len(zones) > 1:
        raise Invalid("resources.zones: name one site, or none to let gridgate route the "
                      f"task (got {len(zones)})", field="resources.zones")
    if zones:
        if "site" in fields and fields["site"] != zones[0]:
            raise Invalid(f"resources.zones names '{zones[0]}' but backend_parameters.site "
                          f"names '{fields['site']}'", field="resources.zones")
        fields["site"] = zones[0]
    if wanted:
        fields["resources"] = wanted
    return fields
