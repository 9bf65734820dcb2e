"""The job spec's `container` section, table-driven: each bad input is refused naming its
field (as the API's 422 lists it) with a message that says what to write instead."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from containers.compat import ContainerNeeds, ImageMpi
from containers.refs import parse_image_ref
from containers.runtimes import LauncherKind, MpiImpl, MpiMode, RuntimeKind
from containers.versions import version
from gateway.domain.container_spec import container_needs
from gateway.domain.field_issues import FieldIssues
from gateway.domain.jobspec import JobSpec

DOCKER = "docker://ghcr.io/lab/app:1.0"
UPLOAD = "upload:3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55"
MPIRUN_MPICH = {"launcher": "mpirun", "flavor": "mpich"}


def spec(container: dict[str, Any], mpi: dict[str, Any] | None = None, **more: Any
         ) -> JobSpec:
    body = {"name": "c", "executable": "/app", "container": container, **more}
    if mpi is not None:
        body["mpi"] = mpi
    return JobSpec.model_validate(body)


def problems(exc: ValidationError) -> dict[str, str]:
    """field -> message, as gateway.api.problems lists them (cross-field issues expanded)."""
    found = {}
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if "[" not in str(p))
        issues = (err.get("ctx") or {}).get("error")
        pairs = ([((*loc, *sub), m) for sub, m in issues.issues]
                 if isinstance(issues, FieldIssues) else [(loc, err["msg"])])
        for where, message in pairs:
            text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where)
            found[text.lstrip(".")] = message.removeprefix("Value error, ")
    return found


# (id, container, mpi, other spec fields, the field named, words of its message)
BAD: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any], str, str]] = [
    ("no image", {}, None, {}, "container.image", "Field required"),
    ("empty image", {"image": ""}, None, {}, "container.image", "at least 1 character"),
    ("image without a scheme", {"image": "ubuntu:22.04"}, None, {}, "container.image",
     "is not an image reference: write docker://"),
    ("plain http", {"image": "http://example.org/app.sif"}, None, {}, "container.image",
     "over https only"),
    ("ftp", {"image": "ftp://example.org/app.sif"}, None, {}, "container.image",
     "not an image source the gateway accepts"),
    ("capitals in a repository", {"image": "docker://Lab/App"}, None, {}, "container.image",
     "the path in lowercase letters"),
    ("credentials in a URL", {"image": "https://u:p@example.org/app.sif"}, None, {},
     "container.image", "must not carry a user or password"),
    ("a bad upload id", {"image": "upload:42"}, None, {}, "container.image",
     "write upload:<id> with the id `gridgate upload` printed"),
    ("an unknown runtime", {"image": DOCKER, "runtime": "podman"}, None, {},
     "container.runtime", "'apptainer', 'singularity' or 'charliecloud'"),
    ("an unknown MPI mode", {"image": DOCKER, "mpi": "shared"}, None, {}, "container.mpi",
     "'hybrid', 'bind' or 'none'"),
    ("a version with a suffix", {"image": DOCKER, "mpi_version": "4.1.4-3"}, MPIRUN_MPICH, {},
     "container.mpi_version", "no suffix such as -1.el8"),
    ("a bind leaving the job directory", {"image": DOCKER, "binds": [
        {"src": "../other", "dst": "/data"}]}, None, {}, "container.binds[0].src",
     "contains a '..' segment"),
    ("a bind from home", {"image": DOCKER, "binds": [{"src": "~/x", "dst": "/data"}]}, None,
     {}, "container.binds[0].src", "must be relative to the job directory, not start with '~'"),
    ("a bind into the control directory", {"image": DOCKER, "binds": [
        {"src": ".gridgate/secret", "dst": "/data"}]}, None, {}, "container.binds[0].src",
     "control directory"),
    ("a colon in a bind", {"image": DOCKER, "binds": [{"src": "a:b", "dst": "/data"}]}, None,
     {}, "container.binds[0].src", "contains ':'"),
    ("a relative destination", {"image": DOCKER, "binds": [{"src": "a", "dst": "data"}]},
     None, {}, "container.binds[0].dst", "is not an absolute path"),
    ("two binds onto one path", {"image": DOCKER, "binds": [
        {"src": "a", "dst": "/data"}, {"src": "b", "dst": "/data"}]}, None, {},
     "container.binds", "two binds end at '/data'"),
    ("a variable the loader reads", {"image": DOCKER, "environment": {"LD_PRELOAD": "x.so"}},
     None, {}, "container.environment", "'LD_PRELOAD' is not allowed"),
    ("a reserved variable", {"image": DOCKER, "environment": {"SLURM_JOB_ID": "1"}}, None,
     {}, "container.environment", "uses a reserved prefix"),
    ("HOME under apptainer", {"image": DOCKER, "environment": {"HOME": "/tmp"}}, None, {},
     "container.environment", "apptainer and singularity set HOME themselves"),
    ("a script", {"image": DOCKER}, None, {"executable": None, "script": "#!/bin/sh\nrun\n"},
     "script", "a script cannot run in a container: give 'executable' instead"),
    ("mode none with a launcher", {"image": DOCKER, "mpi": "none"}, {"launcher": "mpirun"},
     {}, "container.mpi", "mode none runs one process, but mpi.launcher is 'mpirun'"),
    ("mode none naming an MPI", {"image": DOCKER}, {"flavor": "mpich"}, {}, "mpi.flavor",
     "only used with container.mpi hybrid or bind"),
    ("mode none with an MPI version", {"image": DOCKER, "mpi_version": "4.0"}, None, {},
     "container.mpi_version", "only used with container.mpi hybrid or bind"),
    ("hybrid without a launcher", {"image": DOCKER, "mpi": "hybrid"}, {"flavor": "mpich"},
     {}, "mpi.launcher", "set mpi.launcher to mpirun or srun"),
    ("a site flavour name for the image's MPI", {"image": DOCKER},
     {"launcher": "mpirun", "flavor": "mpich-gm"}, {}, "mpi.flavor",
     "one of mpich, intel-mpi, mvapich, cray-mpich, openmpi; not 'mpich-gm'"),
    ("hybrid without the image's MPI", {"image": DOCKER}, {"launcher": "srun"}, {},
     "mpi.flavor", "set mpi.flavor (mpich, intel-mpi, mvapich, cray-mpich, openmpi) and "
                   "container.mpi_version"),
    ("Open MPI without its release", {"image": DOCKER}, {"launcher": "mpirun",
                                                         "flavor": "openmpi"}, {},
     "container.mpi_version", "a site's Open MPI must have its major version"),
    ("bind mode without the release", {"image": DOCKER, "mpi": "bind"}, MPIRUN_MPICH, {},
     "container.mpi_version", "bind mode needs the site's library no older"),
    ("too many binds", {"image": DOCKER, "binds": [{"src": f"d{i}", "dst": f"/d{i}"}
                                                   for i in range(65)]}, None, {},
     "container.binds", "at most 64 items"),
    ("steps after an MPI program", {"image": DOCKER, "mpi_version": "4.1.4",
                                    "then": [{"executable": "true"}]},
     MPIRUN_MPICH, {}, "container.then", "need container.mpi none"),
    ("a step setting HOME", {"image": DOCKER, "then": [
        {"executable": "true", "environment": {"HOME": "/x"}}]}, None, {},
     "container.then[0].environment", "set HOME themselves"),
    ("a step's relative working directory", {"image": DOCKER, "then": [
        {"executable": "true", "workdir": "data"}]}, None, {},
     "container.then[0].workdir", "absolute"),
]


@pytest.mark.parametrize(("container", "mpi", "more", "field", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in BAD])
def test_a_bad_container_names_the_field(container: dict[str, Any], mpi: dict[str, Any] | None,
                                         more: dict[str, Any], field: str,
                                         words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        spec(container, mpi, **more)
    found = problems(caught.value)
    assert field in found, found
    assert words in found[field], found[field]


# Every text of the section, ending in a newline (Python's `$` matches before one).
TRAILING_NEWLINE = [
    ({"image": DOCKER + "\n"}, None, "container.image"),
    ({"image": UPLOAD + "\n"}, None, "container.image"),
    ({"image": "https://example.org/app.sif\n"}, None, "container.image"),
    ({"image": "library://lab/tools/app:1.0\n"}, None, "container.image"),
    ({"image": DOCKER, "mpi_version": "4.1\n"}, MPIRUN_MPICH, "container.mpi_version"),
    ({"image": DOCKER, "binds": [{"src": "data\n", "dst": "/data"}]}, None,
     "container.binds[0].src"),
    ({"image": DOCKER, "binds": [{"src": "data", "dst": "/data\n"}]}, None,
     "container.binds[0].dst"),
    ({"image": DOCKER, "environment": {"GREETING\n": "hi"}}, None, "container.environment"),
    ({"image": DOCKER}, {"launcher": "mpirun", "flavor": "mpich\n"}, "mpi.flavor"),
    ({"image": DOCKER, "then": [{"executable": "t", "environment": {"A\n": "x"}}]}, None,
     "container.then[0].environment"),
]


@pytest.mark.parametrize(("container", "mpi", "field"), TRAILING_NEWLINE)
def test_text_ending_in_a_newline_is_refused(container: dict[str, Any],
                                             mpi: dict[str, Any] | None, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        spec(container, mpi)
    assert field in problems(caught.value)


def test_the_mode_follows_the_launcher_and_is_stored() -> None:
    single = spec({"image": DOCKER})
    assert single.container is not None and single.container.mpi is MpiMode.NONE
    ranks = spec({"image": DOCKER}, MPIRUN_MPICH, resources={"ranks": 4})
    assert ranks.container is not None and ranks.container.mpi is MpiMode.HYBRID
    assert ranks.model_dump(mode="json")["container"]["mpi"] == "hybrid"


def test_user_text_is_kept_verbatim() -> None:
    nasty = "x; touch /tmp/pwned $(id)\nsecond line"
    kept = spec({"image": DOCKER, "environment": {"V": nasty},
                 "binds": [{"src": "in put", "dst": "/data $x"}]})
    assert kept.container is not None and kept.container.environment["V"] == nasty
    assert kept.container.binds[0].dst == "/data $x"


def test_an_upload_may_leave_its_mpi_to_the_gateway() -> None:
    uploaded = spec({"image": UPLOAD, "mpi": "bind"}, {"launcher": "srun"})
    assert uploaded.mpi.flavor is None and uploaded.container is not None


def test_what_routing_asks_the_containers_core() -> None:
    job = spec({"image": DOCKER, "runtime": "apptainer", "mpi_version": "4.1.2",
                "gpus": True}, {"launcher": "srun", "flavor": "openmpi"})
    assert job.container is not None
    assert container_needs(job.container, job.mpi.flavor, LauncherKind.SRUN) == ContainerNeeds(
        parse_image_ref(DOCKER), MpiMode.HYBRID, ImageMpi(MpiImpl.OPENMPI, version("4.1.2")),
        RuntimeKind.APPTAINER, LauncherKind.SRUN, gpus=True)
    single = spec({"image": DOCKER})
    assert single.container is not None
    assert container_needs(single.container, None, LauncherKind.NONE) == ContainerNeeds(
        parse_image_ref(DOCKER), MpiMode.NONE, launcher=LauncherKind.NONE)


def test_the_served_schema_shows_the_section() -> None:
    schema = JobSpec.model_json_schema()
    section = schema["$defs"]["ContainerSpec"]["properties"]
    assert set(section) == {"image", "runtime", "mpi", "mpi_version", "binds", "environment",
                            "workdir", "stdin", "stdout", "stderr", "gpus", "ignore_error",
                            "then"}
    assert schema["$defs"]["RuntimeKind"]["enum"] == ["apptainer", "singularity",
                                                      "charliecloud"]
    assert schema["$defs"]["MpiMode"]["enum"] == ["hybrid", "bind", "none"]
    pattern = section["mpi_version"]["anyOf"][0]["pattern"]
    assert pattern == "^(?:[0-9]{1,9}(?:\\.[0-9]{1,9}){0,3})$"
    assert "upload:<id>" in section["image"]["description"]
