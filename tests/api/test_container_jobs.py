"""Container jobs at POST /jobs and POST /jobs:estimate (issue 15): an image no site can run
is refused with each site's reason, estimate shows the exclusion, and an uploaded SIF's MPI
is read by the gateway from the file itself (real SIFs built by `gridgate image build` from
this host's real MPI libraries, listed by the real unsquashfs)."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import VERSION, version
from gateway.runtime import Runtime
from gateway.services.sites.entry import SiteEntry
from rules.text import ENV_NAME
from tests.conftest import MakeUser, TestUser
from tests.containers.conftest import build, make_rootfs, need

CH = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))
MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (LauncherKind.MPIRUN,))
OPENMPI = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (LauncherKind.MPIRUN,))
DOCKER = "docker://ghcr.io/lab/app:1.0"
SPEC: dict[str, Any] = {"name": "c", "executable": "/app", "resources": {"ranks": 2}}
OPENMPI4_JOB = {**SPEC, "mpi": {"launcher": "mpirun", "flavor": "openmpi"},
                "container": {"image": DOCKER, "mpi_version": "4.1.2"}}
MPICH_JOB = {**SPEC, "mpi": {"launcher": "mpirun", "flavor": "mpich"},
             "container": {"image": DOCKER}}
HOST_LIBS = Path("/usr/lib/x86_64-linux-gnu")


def offer(runtime: Runtime, name: str, *mpi: MpiOffer) -> SiteEntry:
    """The local site (or a copy of it named `name`) offering charliecloud and `mpi` to
    container jobs, and mpirun to all."""
    local = runtime.sites.get("local")
    shape = dataclasses.replace(local.shape, name=name, mpi_launchers=frozenset({"mpirun"}),
                                mpi_flavors=frozenset({"mpich", "openmpi"}))
    entry = dataclasses.replace(local, name=name, shape=shape,
                                containers=SiteContainerCaps(name, "local", (CH,), mpi))
    runtime.sites._entries[name] = entry
    return entry


def problem(r: Any) -> tuple[str, set[str]]:
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    return body["detail"], {e["field"] for e in body.get("errors", [])} | {body.get("field")}


def test_an_image_no_site_can_run_is_refused_with_the_reason(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    offer(runtime, "local", MPICH)
    user = make_user()
    detail, fields = problem(client.post("/api/v1/jobs", json=OPENMPI4_JOB,
                                         headers=user.headers))
    assert detail == ("No site can run this job: image uses Open MPI 4; site local offers "
                      "MPICH ABI only.")
    assert "container" in fields
    pinned = client.post("/api/v1/jobs", json={**OPENMPI4_JOB, "site": "local"},
                         headers=user.headers)
    assert problem(pinned)[0] == detail
    accepted = client.post("/api/v1/jobs", json=MPICH_JOB, headers=user.headers)
    assert accepted.status_code == 202, accepted.text
    assert accepted.json()["spec"]["container"] == {
        "image": DOCKER, "runtime": None, "mpi": "hybrid", "mpi_version": None, "binds": [],
        "workdir": None, "stdin": None, "stdout": None, "stderr": None, "environment": {},
        "ignore_error": False, "then": [],
        "gpus": False}


def test_a_site_without_containers_refuses_container_jobs(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # The local site offers ch-run where the host has it (test_local_containers.py).
    local = runtime.sites.get("local")
    runtime.sites._entries["local"] = dataclasses.replace(local, containers=None)
    detail, fields = problem(client.post("/api/v1/jobs", json=MPICH_JOB,
                                         headers=make_user().headers))
    assert detail == "No site can run this job: site local offers no container runtime."
    assert "container" in fields


def test_estimate_shows_the_exclusion(client: TestClient, runtime: Runtime,
                                      make_user: MakeUser) -> None:
    offer(runtime, "local", MPICH, OPENMPI)
    offer(runtime, "galaxy", MPICH)
    r = client.post("/api/v1/jobs:estimate", json=OPENMPI4_JOB, headers=make_user().headers)
    assert r.status_code == 200, r.text
    estimate = r.json()
    assert estimate["chosen"] == ["local"]
    by_site = {c["site"]: c for c in estimate["candidates"]}
    assert by_site["galaxy"]["excluded"] == ("image uses Open MPI 4; site galaxy offers MPICH "
                                            "ABI only")
    assert by_site["local"]["excluded"] is None
    assert "image" not in by_site["galaxy"]


def test_estimate_says_the_gateway_pulls_the_image_for_ch_run(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    offer(runtime, "local", MPICH)  # charliecloud: ch-run cannot pull
    r = client.post("/api/v1/jobs:estimate", json=MPICH_JOB, headers=make_user().headers)
    assert r.status_code == 200, r.text
    (local,) = r.json()["candidates"]
    assert local["image"] == f"{DOCKER} is pulled by the gateway and staged (ch-run cannot pull)"


def test_container_text_ending_in_a_newline_is_refused(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    for container, field in (({"image": DOCKER + "\n"}, "container.image"),
                             ({"image": DOCKER, "binds": [{"src": "d\n", "dst": "/d"}]},
                              "container.binds[0].src"),
                             ({"image": DOCKER, "environment": {"A\n": "1"}},
                              "container.environment")):
        r = client.post("/api/v1/jobs", json={"name": "c", "executable": "/app",
                                              "container": container}, headers=user.headers)
        assert field in problem(r)[1], r.text


def test_cross_field_problems_name_each_field(client: TestClient,
                                              make_user: MakeUser) -> None:
    r = client.post("/api/v1/jobs", headers=make_user().headers, json={
        **SPEC, "mpi": {"launcher": "mpirun", "flavor": "mpich-gm"},
        "container": {"image": DOCKER}})
    detail, fields = problem(r)
    assert "mpi.flavor" in fields
    assert "in a container job mpi.flavor names the MPI inside the image" in detail


# --- uploaded images: the gateway reads their MPI ----------------------------------------

def image_with(root: Path, out: Path, libraries: list[str]) -> Path:
    """A SIF of /bin/sh and these real libraries of this host (with their soname links)."""
    tree = make_rootfs(root)
    for name in libraries:
        real = (HOST_LIBS / name).resolve()
        target = tree / str(HOST_LIBS).lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(real, target / real.name)
        if real.name != name:
            (target / name).symlink_to(real.name)
    build(tree, out)
    return out


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    need("mksquashfs")
    need("siftool")
    need("unsquashfs")
    tmp = tmp_path_factory.mktemp("images")
    return {"openmpi": image_with(tmp / "ompi", tmp / "ompi.sif",
                                  ["libmpi.so.40", "libopen-pal.so.40"]),
            "mpich": image_with(tmp / "mpich", tmp / "mpich.sif", ["libmpich.so.12"])}


def upload(client: TestClient, user: TestUser, data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    created = client.post("/api/v1/uploads", json={"name": "app.sif", "size": len(data),
                                                   "sha256": sha}, headers=user.headers)
    assert created.status_code == 201, created.text
    upload_id: str = created.json()["id"]
    put = client.put(f"/api/v1/uploads/{upload_id}", content=data, headers={
        **user.headers, "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}"})
    assert put.status_code == 200, put.text
    done = client.post(f"/api/v1/uploads/{upload_id}/complete", json={}, headers=user.headers)
    assert done.status_code == 200, done.text
    return upload_id


def uploaded_job(upload_id: str, **mpi: str) -> dict[str, Any]:
    return {**SPEC, "mpi": {"launcher": "mpirun", **mpi},
            "container": {"image": f"upload:{upload_id}"}}


def test_an_uploaded_open_mpi_image_is_refused_where_only_mpich_is(
        client: TestClient, runtime: Runtime, make_user: MakeUser,
        images: dict[str, Path]) -> None:
    offer(runtime, "local", MPICH)
    user = make_user()
    openmpi = upload(client, user, images["openmpi"].read_bytes())
    detail, fields = problem(client.post("/api/v1/jobs", json=uploaded_job(openmpi),
                                         headers=user.headers))
    assert detail == ("No site can run this job: image uses Open MPI 4; site local offers "
                      "MPICH ABI only.")
    assert "container" in fields
    # Stating another MPI than the image holds is refused, naming the statement.
    detail, fields = problem(client.post("/api/v1/jobs", headers=user.headers,
                                         json=uploaded_job(openmpi, flavor="mpich")))
    assert fields >= {"mpi.flavor"}
    assert detail.startswith("mpi.flavor is mpich, but the image holds Open MPI, Open MPI "
                             "ABI (libmpi.so.40: Open MPI 3.0 to 5.0)")


def test_an_uploaded_mpich_image_runs_and_the_spec_says_what_was_found(
        client: TestClient, runtime: Runtime, make_user: MakeUser,
        images: dict[str, Path]) -> None:
    offer(runtime, "local", MPICH, OPENMPI)
    user = make_user()
    mpich = upload(client, user, images["mpich"].read_bytes())
    r = client.post("/api/v1/jobs", json=uploaded_job(mpich), headers=user.headers)
    assert r.status_code == 202, r.text
    stored = r.json()["spec"]
    assert stored["mpi"] == {"launcher": "mpirun", "flavor": "mpich"}
    assert stored["container"]["mpi"] == "hybrid"
    assert stored["container"]["mpi_version"] is None
    openmpi = upload(client, user, images["openmpi"].read_bytes())
    r = client.post("/api/v1/jobs", json=uploaded_job(openmpi), headers=user.headers)
    assert r.status_code == 202, r.text
    assert r.json()["spec"]["mpi"]["flavor"] == "openmpi"
    assert r.json()["spec"]["container"]["mpi_version"] == "4.1"


def test_an_upload_that_is_not_an_image_is_refused(client: TestClient, runtime: Runtime,
                                                   make_user: MakeUser) -> None:
    offer(runtime, "local", MPICH)
    user = make_user()
    text = upload(client, user, b"#!/bin/sh\necho not an image\n")
    for job in (uploaded_job(text), {"name": "c", "executable": "/app",
                                     "container": {"image": f"upload:{text}"}}):
        detail, fields = problem(client.post("/api/v1/jobs", json=job, headers=user.headers))
        assert "container.image" in fields
        assert detail.startswith(f"Upload {text} is not a SIF image the gateway can run")
    missing = "3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55"
    detail, fields = problem(client.post("/api/v1/jobs", json=uploaded_job(missing),
                                         headers=user.headers))
    assert detail == (f"You have no upload {missing}: upload the image first (`gridgate "
                      "upload FILE`).")


def test_the_served_job_schema_documents_the_container_section(client: TestClient) -> None:
    schema = client.get("/api/v1/schemas/job-spec").json()
    assert schema["properties"]["container"]["anyOf"][0] == {"$ref": "#/$defs/ContainerSpec"}
    fields = schema["$defs"]["ContainerSpec"]["properties"]
    assert fields["mpi_version"]["anyOf"][0]["pattern"] == VERSION.json_pattern
    assert fields["environment"]["propertyNames"] == {"pattern": ENV_NAME.json_pattern}
    assert "hybrid: the site's launcher starts one container per rank" in \
        fields["mpi"]["description"]
