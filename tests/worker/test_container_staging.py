"""Container jobs through the API and the worker to a Slurm site (issue 15, items 4-5).

The site's file system is a local directory and its file commands run here for real
(LocalTransport); only the scheduler is replayed: sbatch's answer is a recorded-style
`--parsable` job id, and its argv and script (stdin) are kept for the assertions. An
uploaded SIF is staged into the site's cache once; a second job with the same image sends
no bytes (hard link from the cache); each submitted script ends in the exact launch line;
a damaged image never runs. Registry images a site cannot pull come from a real registry
(tests/registry/fixture.py) through the gateway's pull."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.batch.adapter import BatchAdapter
from adapters.slurm import SlurmDialect
from adapters.testing import Call, Recording
from adapters.transport import CommandResult, LocalTransport
from containers.image.sif import read_sif
from containers.pull import PULL_SCRIPT, pulled_name
from containers.refs import parse_image_ref
from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import version
from gateway.db.engine import transaction
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from gateway.services.sites.entry import SiteEntry
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from gateway.worker.submission.submit import submit_accepted
from tests.api.test_container_jobs import upload
from tests.conftest import MakeUser
from tests.containers.conftest import build, make_rootfs, need
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_pull import LOWER, UPPER

APPTAINER = RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"))
CHARLIECLOUD = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))
DOCKER = "docker://ghcr.io/lab/app:1.0"
MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"),
                 (LauncherKind.MPIRUN, LauncherKind.SRUN), command=("mpirun.mpich",),
                 srun_mpi="pmi2")


class SlurmSite:
    """File commands and transfers run on this machine; sbatch goes to the replay."""

    write_reorder_bytes = 0

    def __init__(self) -> None:
        self.local = LocalTransport()
        self.job_ids: list[str] = []
        self.calls: list[Call] = []
        self.uploads: list[tuple[str, int]] = []

    @property
    def scripts(self) -> list[str]:
        return [(c.stdin or b"").decode() for c in self.calls]

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float = 60.0) -> CommandResult:
        if "sbatch" not in argv:
            return self.local.run(argv, stdin=stdin, timeout=timeout)
        self.calls.append(Call(tuple(argv), stdin, timeout))
        assert self.job_ids, f"unexpected submission {argv}"
        return Recording(0, f"{self.job_ids.pop(0)}\n".encode(), b"").result(argv)

    def upload(self, source: Any, path: str, **kw: Any) -> int:
        sent = self.local.upload(source, path, **kw)
        self.uploads.append((path, sent))
        return sent

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)


@pytest.fixture(scope="module")
def sif(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    need("mksquashfs")
    tmp = tmp_path_factory.mktemp("sif")
    build(make_rootfs(tmp / "root"), tmp / "app.sif")
    return (tmp / "app.sif").read_bytes()


def slurm_site(runtime: Runtime, root: Path, *runtimes: RuntimeOffer,
               reaches_registries: bool = False) -> tuple[SiteEntry, SlurmSite]:
    site = SlurmSite()
    local = runtime.sites.get("local")
    entry = SiteEntry(
        name="hpc", kind="slurm", description="replayed", max_jobs=10,
        shape=dataclasses.replace(local.shape, name="hpc", mpi_flavors=frozenset({"mpich"}),
                                  mpi_launchers=frozenset({"srun", "mpirun"})),
        adapter=BatchAdapter(site, SlurmDialect()),  # type: ignore[arg-type]
        workdir_root=str(root), containers=SiteContainerCaps(
            "hpc", "slurm", runtimes or (APPTAINER,), (MPICH,),
            reaches_registries=reaches_registries))
    runtime.sites._entries["hpc"] = entry
    runtime.sites.sync(runtime.sessions)
    return entry, site


def workdir_of(runtime: Runtime, job_id: str) -> str:
    with transaction(runtime.sessions) as session:
        found = session.scalars(select(Attempt.workdir).where(Attempt.job_id == job_id)).one()
    assert found is not None
    return found


def launch_line(workdir: str) -> str:
    return (f"exec apptainer exec --containall --no-eval --bind {workdir}:{workdir} "
            f"--pwd {workdir} {workdir}/.gridgate-image /app 'hello world'")


def post(client: TestClient, headers: dict[str, str], image: str, **extra: Any) -> str:
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": "c", "executable": "/app", "args": ["hello world"], "site": "hpc",
        "container": {"image": image}, **extra})
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    return job_id


def test_the_image_is_staged_once_and_the_script_runs_it(
        client: TestClient, runtime: Runtime, make_user: MakeUser, sif: bytes,
        tmp_path: Path) -> None:
    entry, site = slurm_site(runtime, tmp_path / "scratch")
    user = make_user()
    image = f"upload:{upload(client, user, sif)}"
    worker = Worker(runtime, "w")
    jobs = []
    for native in ("4241", "4242"):
        jobs.append(post(client, user.headers, image))
        site.job_ids.append(native)
        route_jobs(worker.ctx, worker.health)
        assert submit_accepted(worker.ctx, entry)
    assert site.job_ids == []
    # One transfer, into the cache, of the whole image; the second job sent nothing.
    assert [(os.path.basename(p), n) for p, n in site.uploads] == [
        (f".{hashlib.sha256(sif).hexdigest()}.gw-partial", len(sif))]
    for job_id, script in zip(jobs, site.scripts, strict=True):
        workdir = workdir_of(runtime, job_id)
        assert script.splitlines()[-1] == launch_line(workdir)
        staged = Path(workdir) / ".gridgate-image"
        assert staged.read_bytes() == sif and staged.stat().st_nlink == 3  # cache + 2 jobs
        job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
        assert job["state"] == "QUEUED", job
    sbatch = [c.argv for c in site.calls]
    assert all("sbatch" in argv and "--parsable" in argv for argv in sbatch)


def test_a_damaged_image_never_runs(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser, sif: bytes, tmp_path: Path) -> None:
    entry, site = slurm_site(runtime, tmp_path / "scratch")
    user = make_user()
    upload_id = upload(client, user, sif)
    job_id = post(client, user.headers, f"upload:{upload_id}")
    # The store's copy rots after the upload: what arrives never matches its digest.
    digest = hashlib.sha256(sif).hexdigest()
    blob = Path(runtime.settings.store_dir) / "blobs"
    for path in blob.rglob(digest):
        path.chmod(0o600)
        path.write_bytes(sif[:-1] + bytes([sif[-1] ^ 1]))
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    submit_accepted(worker.ctx, entry)
    assert site.calls == []  # never submitted
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "FAILED", job
    assert job["reason"].startswith(f"STAGE_IN_FAILED: the image (sha256 {digest}) did not "
                                    "arrive intact at hpc")


def test_charliecloud_gets_the_squashfs_partition(
        client: TestClient, runtime: Runtime, make_user: MakeUser, sif: bytes,
        tmp_path: Path) -> None:
    entry, site = slurm_site(runtime, tmp_path / "scratch", CHARLIECLOUD)
    user = make_user()
    job_id = post(client, user.headers, f"upload:{upload(client, user, sif)}")
    site.job_ids.append("77")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    workdir = workdir_of(runtime, job_id)
    (sif_file := tmp_path / "app.sif").write_bytes(sif)
    with sif_file.open("rb") as stream:
        primary = read_sif(stream).primary_partition()
    partition = sif[primary.offset:primary.offset + primary.size]
    assert (Path(workdir) / ".gridgate-image").read_bytes() == partition
    assert [n for _, n in site.uploads] == [len(partition)]
    # ch-run runs the partition unpacked once in the site's cache: a job's account cannot
    # mount the file (/dev/fuse is root's), and the image's files are there, with the
    # /ch/environment the bare --set-env (the image's own environment) reads.
    sha = hashlib.sha256(partition).hexdigest()
    unpacked = tmp_path / "scratch" / ".gridgate-cache" / f"{sha}.d"
    assert (unpacked / "bin" / "sh").read_bytes() == Path("/bin/sh").resolve().read_bytes()
    assert (unpacked / "ch" / "environment").is_file()
    assert site.scripts[0].splitlines()[-1] == (
        f"exec ch-run -b {workdir}:/mnt/0 -c /mnt/0 --env-no-expand --set-env {unpacked} -- "
        "/app 'hello world'")


def test_a_damaged_image_is_never_extracted_for_charliecloud(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path) -> None:
    need("mksquashfs")
    # An image of its own: the partition the gateway extracted from an image is kept by
    # the SIF's digest, and a damaged copy of an image extracted already is never read.
    build(make_rootfs(tmp_path / "root"), tmp_path / "own.sif")
    data = (tmp_path / "own.sif").read_bytes()
    entry, site = slurm_site(runtime, tmp_path / "scratch", CHARLIECLOUD)
    user = make_user()
    job_id = post(client, user.headers, f"upload:{upload(client, user, data)}")
    digest = hashlib.sha256(data).hexdigest()
    for path in (Path(runtime.settings.store_dir) / "blobs").rglob(digest):
        path.chmod(0o600)
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    submit_accepted(worker.ctx, entry)
    assert site.calls == [] and site.uploads == []  # nothing sent, never submitted
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "FAILED", job
    assert job["reason"].startswith("STAGE_IN_FAILED: the image "), job["reason"]
    assert "does not match its digest" in job["reason"] and digest in job["reason"]


def test_a_registry_image_is_pulled_on_a_site_that_reaches_registries(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path) -> None:
    root = tmp_path / "scratch"
    entry, site = slurm_site(runtime, root, reaches_registries=True)
    user = make_user()
    job_id = post(client, user.headers, DOCKER)
    site.job_ids.append("78")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    assert site.uploads == []  # nothing staged: the site pulls
    workdir = workdir_of(runtime, job_id)
    image = f"{root}/.gridgate-cache/{pulled_name(parse_image_ref(DOCKER))}"
    pull = shlex.join(["flock", f"{image}.lock", "sh", "-c", PULL_SCRIPT, "sh", image, DOCKER,
                       "apptainer"])
    assert site.scripts[0].splitlines()[-2:] == [
        f"{pull} || exit 1",
        f"exec apptainer exec --containall --no-eval --bind {workdir}:{workdir} "
        f"--pwd {workdir} {image} /app 'hello world'"]


@pytest.mark.parametrize(("launcher", "words"), [
    ("srun", "srun --mpi=pmi2"), ("mpirun", "mpirun.mpich -n 2")])
def test_an_mpi_job_starts_one_container_per_rank(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path,
        launcher: str, words: str) -> None:
    root = tmp_path / "scratch"
    entry, site = slurm_site(runtime, root, reaches_registries=True)
    user = make_user()
    job_id = post(client, user.headers, DOCKER, resources={"ranks": 2},
                  mpi={"launcher": launcher, "flavor": "mpich"})
    site.job_ids.append("79")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    workdir = workdir_of(runtime, job_id)
    image = f"{root}/.gridgate-cache/{pulled_name(parse_image_ref(DOCKER))}"
    script = site.scripts[0].splitlines()
    assert script[-1] == (f"exec {words} apptainer exec --no-home --no-eval "
                          f"--bind {workdir}:{workdir} --pwd {workdir} {image} /app "
                          "'hello world'")
    assert sum("srun" in line or "mpirun" in line for line in script) == 1


@pytest.fixture
def pushed(registry: Registry, runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> str:
    """docker://REGISTRY/lab/app:1.0 in the real test registry (two layers, a whiteout),
    which the gateway may reach over plain HTTP."""
    monkeypatch.setattr(runtime.settings, "insecure_registries", registry.host)
    push_image(registry, "lab/app", "1.0", [LOWER, UPPER], ["GREETING=hello"])
    return f"docker://{registry.host}/lab/app:1.0"


def test_a_registry_image_for_a_site_that_cannot_reach_registries_is_pulled_by_the_gateway(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path,
        registry: Registry, pushed: str) -> None:
    entry, site = slurm_site(runtime, tmp_path / "scratch")
    user = make_user()
    worker = Worker(runtime, "w")
    jobs, blob_requests = [], 0
    for native in ("81", "82"):
        jobs.append(post(client, user.headers, pushed))
        site.job_ids.append(native)
        route_jobs(worker.ctx, worker.health)
        assert submit_accepted(worker.ctx, entry)
        if native == "81":
            blob_requests = sum("/blobs/" in r for r in registry.requests_logged())
    # Pulled and converted once: the second job fetched no blob and sent no bytes.
    assert blob_requests >= 3  # config and two layers (unless another test pulled first)
    assert sum("/blobs/" in r for r in registry.requests_logged()) == blob_requests
    assert len(site.uploads) == 1
    for job_id, script in zip(jobs, site.scripts, strict=True):
        workdir = workdir_of(runtime, job_id)
        assert script.splitlines()[-1] == launch_line(workdir)  # the staged SIF, no pull
        assert "pull" not in script
        staged = Path(workdir) / ".gridgate-image"
        with staged.open("rb") as stream:
            assert read_sif(stream).primary_partition().size > 0


def test_charliecloud_runs_a_registry_image_the_gateway_pulled(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path,
        pushed: str) -> None:
    # ch-run cannot pull, even where the site reaches registries.
    entry, site = slurm_site(runtime, tmp_path / "scratch", CHARLIECLOUD,
                             reaches_registries=True)
    user = make_user()
    job_id = post(client, user.headers, pushed)
    site.job_ids.append("83")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    workdir = workdir_of(runtime, job_id)
    sha = hashlib.sha256((Path(workdir) / ".gridgate-image").read_bytes()).hexdigest()
    unpacked = tmp_path / "scratch" / ".gridgate-cache" / f"{sha}.d"
    assert (unpacked / "etc/keep").read_text() == "kept\n"
    assert not (unpacked / "etc/motd").exists()  # the upper layer's whiteout
    assert sorted(p.name for p in (unpacked / "var/cache").iterdir()) == ["new"]
    # The image's Env, which ch-run applies with a bare --set-env.
    assert (unpacked / "ch" / "environment").read_text() == "GREETING=hello\n"
    assert site.scripts[0].splitlines()[-1] == (
        f"exec ch-run -b {workdir}:/mnt/0 -c /mnt/0 --env-no-expand --set-env {unpacked} -- "
        "/app 'hello world'")


def test_a_registry_image_that_is_not_there_fails_the_job_naming_it(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path,
        registry: Registry, pushed: str) -> None:
    entry, site = slurm_site(runtime, tmp_path / "scratch")
    user = make_user()
    missing = f"docker://{registry.host}/lab/app:no-such-tag"
    job_id = post(client, user.headers, missing)
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    submit_accepted(worker.ctx, entry)
    assert site.calls == [] and site.uploads == []
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "FAILED", job
    assert job["reason"].startswith(f"STAGE_IN_FAILED: pulling {missing}: not found"), job


def test_bound_job_directories_are_made_when_nothing_is_staged(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path) -> None:
    """A site that pulls the image itself and a job with no inputs: staging has no file
    to send, but the directories the container binds (where outputs go, a TES task's
    volumes) must exist before the runtime binds them."""
    root = tmp_path / "scratch"
    entry, site = slurm_site(runtime, root, reaches_registries=True)
    user = make_user()
    job_id = post(client, user.headers, DOCKER, container={"image": DOCKER, "binds": [
        {"src": "tes/out", "dst": "/out"}, {"src": "tes/vol/a", "dst": "/vol/a"}]})
    site.job_ids.append("79")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    assert site.uploads == []
    workdir = Path(workdir_of(runtime, job_id))
    assert (workdir / "tes/out").is_dir() and (workdir / "tes/vol/a").is_dir()
    assert (workdir / "tes/out").stat().st_mode & 0o777 == 0o700


def test_steps_run_their_own_images(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser, sif: bytes, tmp_path: Path) -> None:
    """A job whose steps name other images (a GA4GH TES task's executors): the site pulls
    the registry ones, stage-in ships the uploaded SIF beside the job's own, and each
    step's line runs its image."""
    root = tmp_path / "scratch"
    entry, site = slurm_site(runtime, root, reaches_registries=True)
    user = make_user()
    mine = f"upload:{upload(client, user, sif)}"
    other = "docker://ghcr.io/lab/other:2"
    job_id = post(client, user.headers, DOCKER, container={"image": DOCKER, "then": [
        {"executable": "/tool", "image": mine},
        {"executable": "/report", "args": ["x y"], "image": other, "ignore_error": True},
        {"executable": "/app", "args": ["again"]}]})
    site.job_ids.append("80")
    worker = Worker(runtime, "w")
    route_jobs(worker.ctx, worker.health)
    assert submit_accepted(worker.ctx, entry)
    workdir = workdir_of(runtime, job_id)
    assert (Path(workdir) / ".gridgate-image-1").read_bytes() == sif
    pulled = [f"{root}/.gridgate-cache/{pulled_name(parse_image_ref(ref))}"
              for ref in (DOCKER, other)]

    def line(image: str, *words: str) -> str:
        return (f"apptainer exec --containall --no-eval --bind {workdir}:{workdir} "
                f"--pwd {workdir} {image} {' '.join(words)}")

    record = 'gridgate_code=$?; echo $gridgate_code >> "$GRIDGATE_WORKDIR"/.gridgate-steps'
    stop = '[ "$gridgate_code" -eq 0 ] || exit "$gridgate_code"'
    assert site.scripts[0].splitlines()[-12:] == [
        line(pulled[0], "/app", shlex.quote("hello world")), record, stop,
        line(f"{workdir}/.gridgate-image-1", "/tool"), record, stop,
        line(pulled[1], "/report", shlex.quote("x y")), record,
        line(pulled[0], "/app", "again"), record, stop, "exit 0"]
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers)
    assert job.status_code == 200 and job.json()["state"] == "QUEUED"
