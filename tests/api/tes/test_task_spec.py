"""A TES task as a job spec: the translation, accepted by the job spec itself, and every
field not translated yet refused by name."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.api.tes.task_model import TesTask
from gateway.api.tes.task_spec import image_ref, job_spec
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import JobSpec

TASK: dict[str, Any] = {
    "name": "align",
    "executors": [{"image": "ubuntu:22.04", "command": ["echo", "hello; rm -rf /"],
                   "env": {"SAMPLE": "a b"}}],
    "resources": {"cpu_cores": 2, "ram_gb": 1.0, "zones": ["kth"]},
    "tags": {"run": "7"},
}


def test_a_task_is_a_job_spec() -> None:
    spec = JobSpec.model_validate(job_spec(TesTask.model_validate(TASK)))
    assert spec.name == "align" and spec.site == "kth"
    assert (spec.executable, spec.args) == ("echo", ["hello; rm -rf /"])  # data, not shell
    assert spec.container is not None and spec.container.image == "docker://ubuntu:22.04"
    assert spec.container.environment == {"SAMPLE": "a b"}
    assert spec.resources.threads_per_rank == 2 and spec.labels == {"run": "7"}
    bare = TesTask.model_validate({"executors": TASK["executors"], "id": "ignored", "state": "X"})
    assert JobSpec.model_validate(job_spec(bare)).name == "tes-task"


def test_image_references() -> None:
    assert image_ref("quay.io/biocontainers/samtools:1.17") == \
        "docker://quay.io/biocontainers/samtools:1.17"
    assert image_ref("docker://alpine") == "docker://alpine"
    assert image_ref("https://example.org/a.sif") == "https://example.org/a.sif"


@pytest.mark.parametrize(("change", "field"), [
    ({"executors": TASK["executors"] * 2}, "executors"),
    ({"executors": [{**TASK["executors"][0], "workdir": "/data"}]}, "executors.0.workdir"),
    ({"executors": [{**TASK["executors"][0], "stdout": "/out"}]}, "executors.0.stdout"),
    ({"executors": [{**TASK["executors"][0], "ignore_error": True}]},
     "executors.0.ignore_error"),
    ({"inputs": [{"path": "/data/x", "url": "https://example.org/x"}]}, "inputs"),
    ({"outputs": [{"path": "/data/y", "url": "https://example.org/y"}]}, "outputs"),
    ({"volumes": ["/vol"]}, "volumes"),
])
def test_what_is_not_translated_is_refused_by_name(change: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as refused:
        job_spec(TesTask.model_validate({**TASK, **change}))
    assert refused.value.extra["field"] == field


@pytest.mark.parametrize("body", [
    {"executors": []},
    {"executors": [{"image": "alpine", "command": []}]},
    {"executors": "echo"},
    {"executors": [{"image": "alpine", "command": ["true"]}], "resources": {"ram_gb": 0}},
])
def test_malformed_bodies_are_refused_by_the_model(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TesTask.model_validate(body)
