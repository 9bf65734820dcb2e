"""TES resources as job spec fields: sizes converted, backend parameters read or refused,
and the fields produced accepted by the job spec itself."""

from __future__ import annotations

import pytest

from gateway.api.tes.resources import BACKEND_PARAMETERS, spec_fields
from gateway.api.tes.task_model import TesResources
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import JobSpec


def test_cores_memory_disk_and_backend_parameters() -> None:
    fields = spec_fields(TesResources.model_validate({
        "cpu_cores": 4, "ram_gb": 8.0, "disk_gb": 40.0, "preemptible": True,
        "backend_parameters": {"project": "astro", "partition": "short", "walltime": "01:30:00",
                               "routing": "cheapest", "qos": "long", "VmSize": "large"},
    }))
    # 8 GB = 8e9 bytes = 7629.39... MiB, rounded up: never less than asked; disk_gb is the
    # node-local scratch.
    assert fields == {"project": "astro", "partition": "short", "qos": "long",
                      "routing": {"policy": "cheapest"},
                      "resources": {"threads_per_rank": 4, "memory_mb": 7630,
                                    "scratch_mb": 38147, "walltime": "01:30:00"}}
    spec = JobSpec.model_validate({"name": "t", "executable": "/bin/true", **fields})
    assert (spec.resources.walltime, spec.resources.memory_mb,
            spec.resources.scratch_mb, spec.qos) == (5400, 7630, 38147, "long")


def test_no_memory_asked_for_zero_gigabytes() -> None:
    # Snakemake's TES executor sends ceil(mem_mb / 1000): 0 for mem_mb=0, and 1 GB (954
    # MiB, more than the testbed's nodes have) for any mem_mb from 1 to 1000.
    assert spec_fields(TesResources(cpu_cores=1, ram_gb=0, disk_gb=0)) == {
        "resources": {"threads_per_rank": 1}}
    assert spec_fields(TesResources(ram_gb=0.5)) == {"resources": {"memory_mb": 477}}


def test_strict_refuses_unknown_parameters_by_name() -> None:
    with pytest.raises(Invalid) as refused:
        spec_fields(TesResources(backend_parameters={"VmSize": "x", "site": "a"},
                              backend_parameters_strict=True))
    assert "VmSize" in str(refused.value)
    assert all(key in str(refused.value) for key in BACKEND_PARAMETERS)
    assert spec_fields(TesResources(backend_parameters={"site": "a"},
                                 backend_parameters_strict=True)) == {"site": "a"}


def test_zones_are_where_routing_may_send_the_task() -> None:
    assert spec_fields(TesResources(zones=["hpc2n", "eu"])) == {
        "routing": {"zones": ["hpc2n", "eu"]}}
    assert spec_fields(TesResources(zones=["kth"], backend_parameters={"routing": "fastest"})
                       ) == {"routing": {"policy": "fastest", "zones": ["kth"]}}
    with pytest.raises(Invalid, match="not both"):
        spec_fields(TesResources(zones=["a"], backend_parameters={"site": "a"}))
    assert spec_fields(None) == {} == spec_fields(TesResources())
