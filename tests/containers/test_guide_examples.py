"""The container guide's examples (docs/researchers/containers.md) are valid as written:
the job spec and the site declaration shown there pass the gateway's own models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from containers.image.definition import parse_definition
from gateway.domain.jobspec import JobSpec
from gateway.siteconfig.containers import SiteContainers

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "researchers" / "containers.md"
EXAMPLE = ROOT / "examples" / "container-pingpong" / "job.yaml"


def _yaml_after(marker: str) -> Any:
    text = GUIDE.read_text()
    section = text[text.index(marker):]
    start = section.index("```yaml\n") + len("```yaml\n")
    return yaml.safe_load(section[start:section.index("```\n", start)])


def test_the_readme_container_job_spec_is_valid() -> None:
    spec = JobSpec.model_validate({"name": "pingpong", **_yaml_after("**Job spec.**")})
    assert spec.container is not None
    assert (spec.container.runtime, spec.container.mpi) == ("charliecloud", "hybrid")
    assert [b.dst for b in spec.container.binds] == ["/data"]


def test_the_readme_site_declaration_is_valid() -> None:
    section = SiteContainers.model_validate(_yaml_after("**Sites** declare")["containers"])
    assert [r.kind for r in section.runtimes] == ["charliecloud"]
    assert [m.flavor for m in section.mpi] == ["mpich"]


def test_the_readme_image_definition_is_valid() -> None:
    definition = parse_definition(_yaml_after("A definition file does the same"))
    assert definition.base == "rootfs/"
    assert [(src, str(dest)) for src, dest in definition.files] == [
        ("pingpong.py", "/opt/app/pingpong.py")]
    assert dict(definition.environment) == {"OMP_NUM_THREADS": "1"}


def test_the_example_container_job_is_valid_once_its_image_is_uploaded() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    # `gridgate submit` uploads the file it names and sends upload:<id> instead.
    assert data["container"]["image"] == "./pingpong.sif"
    data["container"]["image"] = "upload:6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04"
    spec = JobSpec.model_validate(data)
    assert spec.container is not None and spec.container.mpi == "hybrid"
    assert spec.resources.ranks == 2 and spec.outputs == ["results.jsonl"]
