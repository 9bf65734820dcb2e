"""A TES task as a job spec: the translation, accepted by the job spec itself, and every
field not translated yet refused by name."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.api.tes.task_files import Content
from gateway.api.tes.task_model import TesTask
from gateway.api.tes.task_spec import image_ref, job_spec
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import JobSpec


def no_content(content: Content) -> str:
    raise AssertionError(f"no inline input expected, got {content}")


def no_listing(url: str) -> list[str]:
    raise AssertionError(f"no directory expected, got {url}")


TASK: dict[str, Any] = {
    "name": "align",
    "executors": [{"image": "ubuntu:22.04", "command": ["echo", "hello; rm -rf /"],
                   "env": {"SAMPLE": "a b"}}],
    "resources": {"cpu_cores": 2, "ram_gb": 1.0, "zones": ["kth"]},
    "tags": {"run": "7"},
}


def test_a_task_is_a_job_spec() -> None:
    spec = JobSpec.model_validate(job_spec(TesTask.model_validate(TASK), no_content, no_listing))
    assert spec.name == "align" and spec.routing.zones == ["kth"] and not spec.pinned
    assert (spec.executable, spec.args) == ("echo", ["hello; rm -rf /"])  # data, not shell
    assert spec.container is not None and spec.container.image == "docker://ubuntu:22.04"
    assert spec.container.environment == {"SAMPLE": "a b"}
    assert spec.resources.threads_per_rank == 2 and spec.labels == {"run": "7"}
    bare = TesTask.model_validate({"executors": TASK["executors"], "id": "ignored", "state": "X"})
    assert JobSpec.model_validate(job_spec(bare, no_content, no_listing)).name == "tes-task"


def test_image_references() -> None:
    assert image_ref("quay.io/biocontainers/samtools:1.17") == \
        "docker://quay.io/biocontainers/samtools:1.17"
    assert image_ref("docker://alpine") == "docker://alpine"
    assert image_ref("https://example.org/a.sif") == "https://example.org/a.sif"


def test_inputs_land_where_the_task_said() -> None:
    kept: list[Content] = []

    def keep(content: Content) -> str:
        kept.append(content)
        return "6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04"

    task = TesTask.model_validate({**TASK, "inputs": [
        {"path": "/data/reads.fq", "url": "https://example.org/reads.fq"},
        {"path": "/data/ref/genome.fa", "url": "site://kth/scratch/genome.fa"},
        {"path": "/params/run.json", "content": '{"k": 31}'}]})
    spec = JobSpec.model_validate(job_spec(task, keep, no_listing))
    assert [(i.source, i.dest) for i in spec.inputs] == [
        ("https://example.org/reads.fq", "tes/data/reads.fq"),
        ("site://kth/scratch/genome.fa", "tes/data/ref/genome.fa"),
        ("upload:6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04", "tes/params/run.json")]
    assert kept == [Content("tes/params/run.json", data=b'{"k": 31}')]
    assert spec.container is not None
    assert [(b.src, b.dst) for b in spec.container.binds] == [("tes/data", "/data"),
                                                               ("tes/params", "/params")]


def test_the_working_directory_is_the_container_s() -> None:
    task = TesTask.model_validate({**TASK, "executors": [{**TASK["executors"][0],
                                                          "workdir": "/usr/src/app"}]})
    spec = JobSpec.model_validate(job_spec(task, no_content, no_listing))
    assert spec.container is not None and spec.container.workdir == "/usr/src/app"
    streams = TesTask.model_validate({**TASK, "executors": [{
        **TASK["executors"][0], "stdin": "/data/in", "stdout": "/data/out", "stderr": "/e/rr"}]})
    container = JobSpec.model_validate(job_spec(streams, no_content, no_listing)).container
    assert container is not None
    assert (container.stdin, container.stdout, container.stderr) == ("/data/in", "/data/out",
                                                                     "/e/rr")
    for bad in ("data", "/data/../etc", "/data/"):
        with pytest.raises(Invalid) as refused:
            job_spec(TesTask.model_validate({**TASK, "executors": [
                {**TASK["executors"][0], "workdir": bad}]}), no_content, no_listing)
        assert refused.value.extra["field"] == "executors.0.workdir"


@pytest.mark.parametrize(("item", "field", "says"), [
    ({"path": "data/x", "url": "https://e.org/x"}, "inputs.0.path", "absolute"),
    ({"path": "/data/../etc/x", "url": "https://e.org/x"}, "inputs.0.path", "normalised"),
    ({"path": "/x", "url": "https://e.org/x"}, "inputs.0.path", "inside a directory"),
    ({"path": "/etc/passwd", "content": "x"}, "inputs.0.path", "cover the image's /etc"),
    ({"path": "/mnt/0/x", "content": "x"}, "inputs.0.path", "cover the image's /mnt"),
    ({"path": "/data/x", "url": "s3://bucket/x"}, "inputs.0.url",
     "cannot fetch s3: URLs; give https://, site://SITE/PATH, upload:ID, file:///PATH"),
    ({"path": "/data/x", "url": "ftp://e.org/x"}, "inputs.0.url", "cannot fetch ftp:"),
    ({"path": "/data/x", "url": "https://e.org/x", "content": "x"}, "inputs.0", "either"),
    ({"path": "/data/x"}, "inputs.0", "either"),
    ({"path": "/data/d", "url": "https://e.org/d", "type": "DIRECTORY"}, "inputs.0.type",
     "DIRECTORY input is read from a file:// or site:// URL only"),
    ({"path": "/data/d", "content": "x", "type": "DIRECTORY"}, "inputs.0", "needs a url"),
])
def test_inputs_refused_name_the_field(item: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(Invalid, match=says) as refused:
        job_spec(TesTask.model_validate({**TASK, "inputs": [item]}), no_content, no_listing)
    assert refused.value.extra["field"] == field


@pytest.mark.parametrize(("change", "field"), [
    ({"volumes": ["/usr/share/x"]}, "volumes.0"),
    ({"volumes": ["vol"]}, "volumes.0"),
])
def test_what_is_not_translated_is_refused_by_name(change: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as refused:
        job_spec(TesTask.model_validate({**TASK, **change}), no_content, no_listing)
    assert refused.value.extra["field"] == field


@pytest.mark.parametrize("body", [
    {"executors": []},
    {"executors": [{"image": "alpine", "command": []}]},
    {"executors": "echo"},
    {"executors": [{"image": "alpine", "command": ["true"]}], "resources": {"ram_gb": -1}},
])
def test_malformed_bodies_are_refused_by_the_model(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TesTask.model_validate(body)


def test_file_urls_are_kept_and_directories_listed() -> None:
    kept: list[Content] = []

    def keep(content: Content) -> str:
        kept.append(content)
        return "6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04"

    task = TesTask.model_validate({**TASK, "inputs": [
        {"path": "/data/a.txt", "url": "file:///srv/alice/a.txt"},
        {"path": "/data/refs", "url": "file:///srv/alice/refs/", "type": "DIRECTORY"}]})
    spec = JobSpec.model_validate(job_spec(task, keep, lambda url: ["x.fa", "sub/y.fa"]))
    assert kept == [Content("tes/data/a.txt", url="file:///srv/alice/a.txt"),
                    Content("tes/data/refs/x.fa", url="file:///srv/alice/refs/x.fa"),
                    Content("tes/data/refs/sub/y.fa", url="file:///srv/alice/refs/sub/y.fa")]
    assert [i.dest for i in spec.inputs] == ["tes/data/a.txt", "tes/data/refs/x.fa",
                                             "tes/data/refs/sub/y.fa"]


def test_a_site_directory_is_its_files_copied_site_to_site() -> None:
    listed: list[str] = []

    def listing(url: str) -> list[str]:
        listed.append(url)
        return ["x.fa", "sub/y.fa"]

    task = TesTask.model_validate({**TASK, "inputs": [
        {"path": "/data/refs", "url": "site://kth/proj/refs/", "type": "DIRECTORY"}]})
    spec = JobSpec.model_validate(job_spec(task, no_content, listing))
    assert listed == ["site://kth/proj/refs/"]
    assert [(i.source, i.dest) for i in spec.inputs] == [
        ("site://kth/proj/refs/x.fa", "tes/data/refs/x.fa"),
        ("site://kth/proj/refs/sub/y.fa", "tes/data/refs/sub/y.fa")]


def test_outputs_are_deliveries_and_their_directories_are_bound() -> None:
    task = TesTask.model_validate({**TASK, "executors": [
        {**TASK["executors"][0], "workdir": "/tmp"}], "outputs": [
        {"path": "/out/result.txt", "url": "file:///srv/alice/result.txt"},
        {"path": "/out/logs", "url": "https://store.example.org/run/", "type": "DIRECTORY"},
        {"path": "/out/parts/*.csv", "path_prefix": "/out/", "url": "file:///srv/alice/p"}]})
    spec = JobSpec.model_validate(job_spec(task, no_content, no_listing))
    assert [(d.glob, d.strip, d.url) for d in spec.deliver] == [
        ("tes/out/result.txt", None, "file:///srv/alice/result.txt"),
        ("tes/out/logs/**", "tes/out/logs", "https://store.example.org/run/"),
        ("tes/out/parts/*.csv", "tes/out", "file:///srv/alice/p")]
    assert spec.deliver[2].url_of("tes/out/parts/a.csv") == "file:///srv/alice/p/parts/a.csv"
    assert spec.container is not None
    assert [(b.src, b.dst) for b in spec.container.binds] == [("tes/out", "/out"),
                                                               ("tes/tmp", "/tmp")]
    assert spec.collected == ["tes/out/result.txt", "tes/out/logs/**",
                              "tes/out/parts/*.csv"]


@pytest.mark.parametrize(("output", "field", "says"), [
    ({"path": "/out/*.txt", "url": "file:///srv/a/"}, "outputs.0.path_prefix", "wildcard"),
    ({"path": "/out/*.txt", "path_prefix": "/other", "url": "file:///srv/a/"},
     "outputs.0.path_prefix", "must be a directory"),
    ({"path": "/*/x.txt", "path_prefix": "/", "url": "file:///srv/a/"}, "outputs.0.path",
     "without wildcards"),
    ({"path": "/out/x", "url": "s3://bucket/x"}, "outputs.0.url", "cannot send outputs to s3"),
    ({"path": "/out/x", "url": "file:///srv/a/../b"}, "outputs.0.url", "normalised"),
    ({"path": "/out/x", "url": "file:///srv/a/x\n"}, "outputs.0.url", "control"),
    ({"path": "/out/x", "url": "https://u:p@e.org/x"}, "outputs.0.url", "credentials"),
    ({"path": "/out/d", "url": "https://e.org/d?sig=1", "type": "DIRECTORY"}, "outputs.0.url",
     "query"),
    ({"path": "/etc/x", "url": "file:///srv/a/x"}, "outputs.0.path", "cover the image's"),
])
def test_outputs_refused_name_the_field(output: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(Invalid, match=says) as refused:
        job_spec(TesTask.model_validate({**TASK, "outputs": [output]}), no_content, no_listing)
    assert refused.value.extra["field"] == field


def test_executors_run_in_order() -> None:
    task = TesTask.model_validate({**TASK, "executors": [
        {"image": "ubuntu:22.04", "command": ["make"], "workdir": "/src", "ignore_error": True},
        {"image": "docker://ubuntu:22.04", "command": ["sh", "-c", "wc -l < /src/log"],
         "env": {"N": "2"}, "stdout": "/out/count", "workdir": "/out"},
        {"image": "quay.io/lab/report:2", "command": ["report"]}]})
    spec = JobSpec.model_validate(job_spec(task, no_content, no_listing))
    container = spec.container
    assert container is not None and container.image == "docker://ubuntu:22.04"
    assert (spec.executable, container.workdir, container.ignore_error) == ("make", "/src", True)
    step, report = container.then
    assert (step.executable, step.args, step.environment, step.stdout, step.workdir,
            step.ignore_error, step.image) == (
        "sh", ["-c", "wc -l < /src/log"], {"N": "2"}, "/out/count", "/out", False, None)
    assert report.image == "docker://quay.io/lab/report:2"
    assert container.images == ["docker://ubuntu:22.04", "docker://quay.io/lab/report:2"]
    # Every executor's working directory is the job's, bound.
    assert [(b.src, b.dst) for b in container.binds] == [("tes/out", "/out"),
                                                         ("tes/src", "/src")]


def test_volumes_are_made_and_bound() -> None:
    task = TesTask.model_validate({**TASK, "volumes": ["/vol/a", "/scratch"], "inputs": [
        {"path": "/vol/in.txt", "content": "x"}]})
    spec = JobSpec.model_validate(job_spec(task, lambda _: "6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04",
                                           no_listing))
    assert spec.container is not None
    assert [(b.src, b.dst) for b in spec.container.binds] == [
        ("tes/scratch", "/scratch"), ("tes/vol", "/vol"), ("tes/vol/a", "/vol/a")]


def test_the_owner_s_directories_the_task_names_are_bound_at_their_paths() -> None:
    shared = ("/srv/gw/users/ada", "/srv/gw/projects/astro")
    uploaded = "6f1c2a9e-4b7d-4e0a-9c3b-2d5e8f7a1b04"

    def binds(task: dict[str, Any]) -> list[tuple[str, str]]:
        spec = JobSpec.model_validate(job_spec(TesTask.model_validate(task),
                                               lambda _: uploaded, no_listing, shared))
        assert spec.container is not None
        return [(b.src, b.dst) for b in spec.container.binds]

    # Snakemake's jobs name the storage prefix in their script, an inline input.
    script = {"path": "/tmp/run.sh",
              "content": "python -m snakemake --default-storage-prefix '/srv/gw/users/ada/wf'"}
    assert binds({**TASK, "inputs": [script]}) == [("tes/tmp", "/tmp"),
                                                   ("/srv/gw/users/ada", "/srv/gw/users/ada")]
    named = {"image": "alpine", "command": ["ls"], "env": {"OUT": "/srv/gw/projects/astro"}}
    assert binds({**TASK, "executors": [named]}) == [
        ("/srv/gw/projects/astro", "/srv/gw/projects/astro")]
    # A longer name is another directory; nothing named, nothing bound.
    other = {"image": "alpine", "command": ["ls", "/srv/gw/users/adam", "/srv/gw/users/ada.x"]}
    assert binds({**TASK, "executors": [other]}) == []
    assert binds(TASK) == []
