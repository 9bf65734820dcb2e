"""The container constraint, table-driven: a site that cannot run the job's image is
excluded for good with `containers.compat`'s reason (what estimate and explain show, and
what POST /jobs answers when no site can), and admission names the `container` field."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from containers.compat import FetchAt, Fit, Refusal
from containers.runtimes import LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import version
from gateway.domain.jobspec import JobSpec
from gateway.scheduling.admission import Admitted, Unroutable, admit
from gateway.scheduling.constraints import (
    JobView,
    LabelRules,
    SiteView,
    container_fit,
    image_fits,
    refusal,
    refusal_field,
    screen,
    screen_all,
)
from gateway.scheduling.feasibility import SiteShape

MPIRUN, MPIEXEC, SRUN = LauncherKind.MPIRUN, LauncherKind.MPIEXEC, LauncherKind.SRUN
CH = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))
APPTAINER = RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"))
MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN,), ("mpirun.mpich",))
MPICH_SRUN = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (SRUN,), srun_mpi="pmi2")
MPICH_MPIEXEC = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIEXEC,))
MPICH_BIND = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN,),
                      bind_paths=("/opt/mpich",))
OPENMPI = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (MPIRUN,))

GALAXY = SiteContainerCaps("galaxy", "sge", (CH,), (MPICH,))
ROADRUNNER = SiteContainerCaps("roadrunner", "slurm", (APPTAINER, CH), (MPICH_SRUN, OPENMPI),
                               reaches_registries=True)
BINDING = SiteContainerCaps("binding", "pbs", (APPTAINER,), (MPICH_BIND,),
                            bind_prefixes=("/project/shared",), gpus=True)
MPIEXEC_ONLY = SiteContainerCaps("hydra", "pbs", (APPTAINER,), (MPICH_MPIEXEC,))

DOCKER = "docker://ghcr.io/lab/app:1.0"
UPLOAD = "upload:3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55"
OPENMPI4_IMAGE: dict[str, Any] = {"mpi": {"launcher": "mpirun", "flavor": "openmpi"},
                                  "container": {"image": DOCKER, "mpi_version": "4.1.2"}}
MPICH_IMAGE: dict[str, Any] = {"mpi": {"launcher": "mpirun", "flavor": "mpich"},
                               "container": {"image": DOCKER}}


def spec(site: str = "auto", **fields: Any) -> JobSpec:
    return JobSpec.model_validate({"name": "j", "executable": "/app", "site": site,
                                   "resources": {"ranks": 2}, **fields})


def with_container(base: dict[str, Any], **container: Any) -> dict[str, Any]:
    return {**base, "container": {**base["container"], **container}}


def view(caps: SiteContainerCaps | None, name: str | None = None) -> SiteView:
    name = name or (caps.site if caps is not None else "bare")
    shape = SiteShape(name, max_nodes=4, cores_per_node=8, memory_mb_per_node=4096,
                      max_walltime=7200, mpi_launchers=frozenset({"mpirun", "srun"}),
                      mpi_flavors=frozenset({"mpich"}))
    return SiteView(name, shape, LabelRules(), True, False, containers=caps)


# (id, job spec fields, the site's declaration, the exclusion or None)
CASES: list[tuple[str, dict[str, Any], SiteContainerCaps | None, str | None]] = [
    ("Open MPI 4 image at an MPICH-only site", OPENMPI4_IMAGE, GALAXY,
     "image uses Open MPI 4; site galaxy offers MPICH ABI only"),
    ("MPICH image at an MPICH site", MPICH_IMAGE, GALAXY, None),
    ("Open MPI 4 image where Open MPI 4 is", OPENMPI4_IMAGE, ROADRUNNER, None),
    ("Intel MPI image under the site's MPICH", {
        "mpi": {"launcher": "mpirun", "flavor": "intel-mpi"},
        "container": {"image": DOCKER}}, GALAXY, None),
    ("bind mode without bind paths", with_container(MPICH_IMAGE, mpi="bind",
                                                    mpi_version="4.0"), GALAXY,
     "no container runtime of site galaxy fits: charliecloud has no bind mode (host MPI "
     "goes in with ch-fromhost)"),
    ("bind mode where no flavour declares bind paths",
     with_container(MPICH_IMAGE, mpi="bind", mpi_version="4.0", runtime="apptainer"),
     SiteContainerCaps("plain", "pbs", (APPTAINER,), (MPICH,)),
     "image uses MPICH 4.0 in bind mode; site plain: it declares no bind paths for MPICH "
     "4.0.2 (hybrid mode needs none)"),
    ("bind mode with the site's bind paths", with_container(MPICH_IMAGE, mpi="bind",
                                                            mpi_version="4.0"),
     BINDING, None),
    ("a site with no containers section", MPICH_IMAGE, None,
     "site bare offers no container runtime"),
    ("a site with no runtime", MPICH_IMAGE, SiteContainerCaps("empty", "slurm"),
     "site empty offers no container runtime"),
    ("GPUs where there are none", with_container(MPICH_IMAGE, gpus=True), GALAXY,
     "the job asks for GPUs; site galaxy declares none"),
    ("a runtime the site lacks", with_container(MPICH_IMAGE, runtime="singularity"), GALAXY,
     "site galaxy offers no singularity (it offers charliecloud 0.31)"),
    ("mpirun means mpiexec where the site lists that", MPICH_IMAGE, MPIEXEC_ONLY, None),
    ("srun with the family's plugin", {**MPICH_IMAGE, "mpi": {"launcher": "srun",
                                                              "flavor": "mpich"}},
     ROADRUNNER, None),
    ("srun at a site that starts its MPICH with mpirun", {
        **MPICH_IMAGE, "mpi": {"launcher": "srun", "flavor": "mpich"}}, GALAXY,
     "image uses MPICH in hybrid mode; site galaxy: it starts MPICH 4.0.2 with mpirun, "
     "not srun"),
    ("an absolute bind source the site shares", with_container(
        MPICH_IMAGE, binds=[{"src": "/project/shared/data", "dst": "/data"}]), BINDING, None),
    ("an absolute bind source the site does not share", with_container(
        MPICH_IMAGE, binds=[{"src": "/project/shared/data", "dst": "/data"}]), GALAXY,
     "site galaxy: bind source '/project/shared/data' is outside the job directory: give a "
     "path relative to it, or an absolute path (this site allows none)"),
    ("a relative bind source anywhere", with_container(
        MPICH_IMAGE, binds=[{"src": "data", "dst": "/data"}]), GALAXY, None),
    ("a single process", {"container": {"image": DOCKER}}, GALAXY, None),
]


@pytest.mark.parametrize(("fields", "caps", "excluded"),
                         [pytest.param(f, c, e, id=i) for i, f, c, e in CASES])
def test_container_exclusions_last(fields: dict[str, Any], caps: SiteContainerCaps | None,
                                   excluded: str | None) -> None:
    screened = screen(JobView(spec(**fields)), view(caps))
    assert screened.candidate.excluded == excluded
    if excluded is not None:
        assert screened.lasting and screened.about == "container"


def test_a_job_without_a_container_ignores_the_declaration() -> None:
    assert screen(JobView(spec(mpi={"launcher": "mpirun"})), view(None)).candidate.excluded \
        is None


def test_the_fit_says_how_the_image_runs() -> None:
    uploaded = spec(container={"image": UPLOAD, "mpi_version": "4.0.2"},
                    mpi={"launcher": "mpirun", "flavor": "mpich"})
    assert container_fit(uploaded, GALAXY, "galaxy") == Fit(
        CH, MPICH, MPIRUN, FetchAt.GATEWAY, extract_squashfs=True)
    assert container_fit(spec(**MPICH_IMAGE), MPIEXEC_ONLY, "hydra") == Fit(
        APPTAINER, MPICH_MPIEXEC, MPIEXEC, FetchAt.GATEWAY)


def test_no_site_for_the_image_is_a_refusal_naming_the_container() -> None:
    job = JobView(spec(**OPENMPI4_IMAGE))
    screened = screen_all(job, [view(GALAXY), view(GALAXY, "galaxy2")])
    assert refusal(screened) == (
        "No site can run this job: image uses Open MPI 4; site galaxy offers MPICH ABI only; "
        "image uses Open MPI 4; site galaxy offers MPICH ABI only.")
    assert refusal_field(screened) == "container"
    assert admit(job.spec, [view(GALAXY), view(ROADRUNNER)], {}) == Admitted(None)
    assert admit(job.spec, [view(GALAXY)], {}) == Unroutable(
        "No site can run this job: image uses Open MPI 4; site galaxy offers MPICH ABI "
        "only.", "container")


def test_a_pinned_job_is_refused_with_the_sites_reason() -> None:
    pinned = spec("galaxy", **OPENMPI4_IMAGE)
    assert admit(pinned, [view(GALAXY), view(ROADRUNNER)], {}) == Unroutable(
        "No site can run this job: image uses Open MPI 4; site galaxy offers MPICH ABI "
        "only.", "container")
    assert admit(spec("roadrunner", **OPENMPI4_IMAGE), [view(GALAXY), view(ROADRUNNER)],
                 {}) == Admitted("roadrunner")


APPTAINER_ONLY_OFFLINE = SiteContainerCaps("offline", "slurm", (APPTAINER,), (MPICH,))
APPTAINER_ONLINE = SiteContainerCaps("online", "slurm", (APPTAINER,), (MPICH,),
                                     reaches_registries=True)
ORAS = "oras://ghcr.io/lab/app.sif:1.0"


# (id, image, site, what estimate/explain says about the image at that site)
IMAGE_ROUTES: list[tuple[str, str, SiteContainerCaps, str | None]] = [
    ("a site that reaches registries pulls itself", DOCKER, APPTAINER_ONLINE, None),
    ("an offline site gets the image from the gateway", DOCKER, APPTAINER_ONLY_OFFLINE,
     f"{DOCKER} is pulled by the gateway and staged (site offline cannot reach registries)"),
    ("ch-run cannot pull, even online", DOCKER, dataclasses.replace(GALAXY,
                                                                     reaches_registries=True),
     f"{DOCKER} is pulled by the gateway and staged (ch-run cannot pull)"),
    ("an oras:// SIF for an offline site", ORAS, APPTAINER_ONLY_OFFLINE,
     f"{ORAS} is pulled by the gateway and staged (site offline cannot reach registries)"),
    ("an upload is staged as always: nothing to say", UPLOAD, APPTAINER_ONLY_OFFLINE, None),
]


@pytest.mark.parametrize(("image", "caps", "note"), [c[1:] for c in IMAGE_ROUTES],
                         ids=[c[0] for c in IMAGE_ROUTES])
def test_the_candidate_says_when_the_gateway_pulls_the_image(
        image: str, caps: SiteContainerCaps, note: str | None) -> None:
    fields = with_container(MPICH_IMAGE, image=image)
    candidate = screen(JobView(spec(**fields)), view(caps)).candidate
    assert candidate.excluded is None
    assert candidate.image == note


def test_each_step_image_must_run_with_the_program_s_runtime() -> None:
    steps = {"image": DOCKER, "then": [
        {"executable": "a", "image": "library://lab/tools/x:1"},
        {"executable": "b", "image": "docker://ghcr.io/lab/other:2"}]}
    job = JobSpec.model_validate({"name": "j", "executable": "/app", "container": steps})
    # Roadrunner pulls registry images itself with Apptainer: every step's image runs.
    fits = image_fits(job, ROADRUNNER, "roadrunner")
    assert not isinstance(fits, Refusal)
    assert [(image, f.runtime.kind, f.fetch_at) for image, f in fits.items()] == [
        (DOCKER, RuntimeKind.APPTAINER, FetchAt.SITE),
        ("library://lab/tools/x:1", RuntimeKind.APPTAINER, FetchAt.SITE),
        ("docker://ghcr.io/lab/other:2", RuntimeKind.APPTAINER, FetchAt.SITE)]
    # Galaxy runs ch-run, which cannot run a library's SIF: the whole job is refused.
    refused = container_fit(job, GALAXY, "galaxy")
    assert isinstance(refused, Refusal)
    assert refused.reason.startswith("a step's image library://lab/tools/x:1: site galaxy: "
                                     "charliecloud cannot run the SIF file")
