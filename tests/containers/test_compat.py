"""Compatibility rules: image x mode x site declaration -> Fit or Refusal, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from containers.compat import ContainerNeeds, FetchAt, Fit, ImageMpi, Refusal, check
from containers.errors import ContainerError, InvalidLaunch
from containers.refs import parse_image_ref
from containers.runtimes import LauncherKind, MpiImpl, MpiMode, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import version

MPIRUN, MPIEXEC, SRUN, NONE = (LauncherKind.MPIRUN, LauncherKind.MPIEXEC, LauncherKind.SRUN,
                               LauncherKind.NONE)
HYBRID, BIND, SINGLE = MpiMode.HYBRID, MpiMode.BIND, MpiMode.NONE
APPTAINER, SINGULARITY, CHARLIECLOUD = (RuntimeKind.APPTAINER, RuntimeKind.SINGULARITY,
                                        RuntimeKind.CHARLIECLOUD)
SITE, GATEWAY = FetchAt.SITE, FetchAt.GATEWAY

DOCKER = parse_image_ref("docker://ghcr.io/lab/mpi-app:1.0")
ORAS = parse_image_ref("oras://ghcr.io/lab/mpi-app.sif:1.0")
UPLOAD = parse_image_ref("upload:3f2b8c1e-9d4a-4e7b-8a6c-2b1d0e9f7a55")
HTTPS = parse_image_ref("https://example.org/images/mpi-app.sif")
LIBRARY = parse_image_ref("library://lab/tools/app:1.0")

APPT_125 = RuntimeOffer(APPTAINER, version("1.2.5"))
APPT_103 = RuntimeOffer(APPTAINER, version("1.0.3"))
SING_3110 = RuntimeOffer(SINGULARITY, version("3.11.0"))
SING_3100 = RuntimeOffer(SINGULARITY, version("3.10.0"))
SING_38 = RuntimeOffer(SINGULARITY, version("3.8.7"))
CH_031 = RuntimeOffer(CHARLIECLOUD, version("0.31"))
CH_025 = RuntimeOffer(CHARLIECLOUD, version("0.25"))

MPICH = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN, SRUN), srun_mpi="pmi2")
OPENMPI = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (MPIRUN, SRUN),
                   srun_mpi="pmix")
OPENMPI_PMI2 = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (SRUN,),
                        srun_mpi="pmi2")
MPICH_SGE = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN,))
CRAY = MpiOffer("cray-mpich", MpiImpl.CRAY_MPICH, version("8.1.28"), (SRUN,), srun_mpi="pmi2",
                bind_paths=("/opt/cray/pe/mpich/8.1.28",),
                library_path=("/opt/cray/pe/mpich/8.1.28/ofi/gnu/9.1/lib",))
MPICH_BIND = MpiOffer("mpich", MpiImpl.MPICH, version("4.0.2"), (MPIRUN,),
                      bind_paths=("/opt/mpich",))
OMPI_BIND = MpiOffer("openmpi", MpiImpl.OPENMPI, version("4.1.4"), (MPIRUN,),
                     bind_paths=("/opt/openmpi",))
OMPI5 = MpiOffer("openmpi5", MpiImpl.OPENMPI, version("5.0.3"), (SRUN,), srun_mpi="pmix_v4")

ROADRUNNER = SiteContainerCaps("roadrunner", "slurm", (APPT_125, SING_3110, CH_031),
                               (MPICH, OPENMPI), reaches_registries=True)
SGE_MPICH = SiteContainerCaps("sge-mpich", "sge", (APPT_125,), (MPICH_SGE,))
CRAY_SITE = SiteContainerCaps("cray", "slurm", (APPT_103, SING_3100), (CRAY,), gpus=True)
OMPI5_SITE = SiteContainerCaps("ompi5", "slurm", (APPT_125,), (OMPI5,))
BIND_SITE = SiteContainerCaps("bindable", "pbs", (APPT_125,), (MPICH_BIND, OMPI_BIND))
PMI2_SITE = SiteContainerCaps("pmi2-only", "slurm", (APPT_125,), (OPENMPI_PMI2,))
CHARLIE = SiteContainerCaps("charlie", "sge", (CH_031,), (MPICH_SGE,))
SING_CHARLIE = SiteContainerCaps("sing-charlie", "sge", (CH_031, SING_3110), (MPICH_SGE,))
OLD = SiteContainerCaps("old", "sge", (APPT_103, SING_38, CH_025))
BARE = SiteContainerCaps("bare", "slurm")
NO_MPI = SiteContainerCaps("no-mpi", "sge", (APPT_125,))
CRAY_FIRST = SiteContainerCaps("cray-first", "slurm", (APPT_125,), (CRAY, MPICH))


def mpi(impl: MpiImpl, ver: str) -> ImageMpi:
    return ImageMpi(impl, version(ver))


def needs(mode: MpiMode = SINGLE, image_mpi: ImageMpi | None = None, **kw: Any
          ) -> ContainerNeeds:
    base: dict[str, Any] = {"image": DOCKER, "mode": mode, "mpi": image_mpi}
    return ContainerNeeds(**(base | kw))


OMPI4 = mpi(MpiImpl.OPENMPI, "4.1.2")
MPICH41 = mpi(MpiImpl.MPICH, "4.1")

CASES: list[tuple[str, ContainerNeeds, SiteContainerCaps, Fit | Refusal]] = [
    # Runtimes: the job's choice, else apptainer > singularity > charliecloud.
    ("one process, first preference", needs(), ROADRUNNER, Fit(APPT_125, None, NONE, SITE)),
    ("the job names singularity", needs(runtime=SINGULARITY), ROADRUNNER,
     Fit(SING_3110, None, NONE, SITE)),
    # ch-run cannot pull: the gateway pulls the OCI image, converts it and ships its
    # SquashFS partition, though the site reaches registries.
    ("the job names charliecloud for an OCI image", needs(runtime=CHARLIECLOUD), ROADRUNNER,
     Fit(CH_031, None, NONE, GATEWAY, extract_squashfs=True)),
    ("singularity before charliecloud", needs(), SING_CHARLIE,
     Fit(SING_3110, None, NONE, GATEWAY)),
    ("charliecloud when it is all there is", needs(), CHARLIE,
     Fit(CH_031, None, NONE, GATEWAY, extract_squashfs=True)),
    ("a SIF image skips charliecloud", needs(image=ORAS), SING_CHARLIE,
     Fit(SING_3110, None, NONE, GATEWAY)),
    ("a SIF in an OCI registry on charliecloud: the gateway pulls it", needs(image=ORAS),
     CHARLIE, Fit(CH_031, None, NONE, GATEWAY, extract_squashfs=True)),
    ("the job names charliecloud for a SIF in a registry",
     needs(image=ORAS, runtime=CHARLIECLOUD), ROADRUNNER,
     Fit(CH_031, None, NONE, GATEWAY, extract_squashfs=True)),
    ("a SIF in a library cannot run on charliecloud", needs(image=LIBRARY), CHARLIE,
     Refusal("no container runtime of site charlie fits: charliecloud cannot run the SIF "
             "file library://lab/tools/app:1.0 from a library: give it as upload:<id> "
             "(`gridgate upload`), an https:// URL or oras://, which the gateway converts "
             "for ch-run, or use apptainer")),
    ("a library image for a site that cannot reach registries", needs(image=LIBRARY),
     SING_CHARLIE,
     Refusal("site sing-charlie cannot reach registries, and the gateway does not pull "
             "library:// images: give library://lab/tools/app:1.0 as docker://, oras://, "
             "https:// or upload:<id>")),
    ("an uploaded SIF on charliecloud: the gateway extracts its SquashFS",
     needs(image=UPLOAD), CHARLIE, Fit(CH_031, None, NONE, GATEWAY, extract_squashfs=True)),
    ("a SIF on a web server on charliecloud, fetched by the gateway though the site could",
     needs(HYBRID, MPICH41, image=HTTPS, runtime=CHARLIECLOUD), ROADRUNNER,
     Fit(CH_031, MPICH, MPIRUN, GATEWAY, extract_squashfs=True)),
    ("a SIF on a web server with apptainer is fetched by the site", needs(image=HTTPS),
     ROADRUNNER, Fit(APPT_125, None, NONE, SITE)),
    ("an uploaded MPICH SIF in hybrid mode on charliecloud", needs(HYBRID, MPICH41,
                                                                   image=UPLOAD),
     CHARLIE, Fit(CH_031, MPICH_SGE, MPIRUN, GATEWAY, extract_squashfs=True)),
    ("the job names a runtime the site lacks", needs(runtime=SINGULARITY), SGE_MPICH,
     Refusal("site sge-mpich offers no singularity (it offers apptainer 1.2.5)")),
    ("too old for --no-eval, the next one is taken", needs(), CRAY_SITE,
     Fit(SING_3100, None, NONE, GATEWAY)),
    ("the job names a runtime that is too old", needs(runtime=APPTAINER), CRAY_SITE,
     Refusal("site cray: apptainer 1.0.3 is older than 1.1.0, the first with --no-eval")),
    ("every runtime too old", needs(), OLD,
     Refusal("no container runtime of site old fits: apptainer 1.0.3 is older than 1.1.0, "
             "the first with --no-eval; singularity 3.8.7 is older than 3.10.0, the first with "
             "--no-eval; charliecloud 0.25 is older than 0.26, the first with ch-run "
             "--set-env=NAME=VALUE")),
    ("no runtime at all", needs(), BARE, Refusal("site bare offers no container runtime")),
    # GPUs.
    ("GPUs at a site without", needs(gpus=True), ROADRUNNER,
     Refusal("the job asks for GPUs; site roadrunner declares none")),
    ("GPUs with apptainer or singularity", needs(gpus=True), CRAY_SITE,
     Fit(SING_3100, None, NONE, GATEWAY)),
    # Where the image is fetched.
    ("an upload always comes from the gateway", needs(image=UPLOAD), ROADRUNNER,
     Fit(APPT_125, None, NONE, GATEWAY)),
    ("a registry the site cannot reach", needs(), SGE_MPICH,
     Fit(APPT_125, None, NONE, GATEWAY)),
    # Hybrid: same ABI family, Open MPI of the same major.
    ("Open MPI where only MPICH is", needs(HYBRID, OMPI4), SGE_MPICH,
     Refusal("image uses Open MPI 4; site sge-mpich offers MPICH ABI only")),
    ("MPI where none is", needs(HYBRID, MPICH41), NO_MPI,
     Refusal("image uses MPICH 4.1; site no-mpi offers no MPI")),
    ("Open MPI 4 with Open MPI 4", needs(HYBRID, OMPI4), ROADRUNNER,
     Fit(APPT_125, OPENMPI, MPIRUN, SITE)),
    ("Open MPI 4 with srun", needs(HYBRID, OMPI4, launcher=SRUN), ROADRUNNER,
     Fit(APPT_125, OPENMPI, SRUN, SITE)),
    ("Open MPI 4 where Open MPI 5 is", needs(HYBRID, OMPI4), OMPI5_SITE,
     Refusal("image uses Open MPI 4 in hybrid mode; site ompi5: it offers Open MPI 5, and "
             "Open MPI changes its ABI and launcher between major versions")),
    ("Open MPI 5 with srun --mpi=pmix_v4", needs(HYBRID, mpi(MpiImpl.OPENMPI, "5.0.5")),
     OMPI5_SITE, Fit(APPT_125, OMPI5, SRUN, GATEWAY)),
    ("MPICH with srun --mpi=pmi2", needs(HYBRID, MPICH41, launcher=SRUN), ROADRUNNER,
     Fit(APPT_125, MPICH, SRUN, SITE)),
    ("Intel MPI under the site's MPICH", needs(HYBRID, mpi(MpiImpl.INTEL_MPI, "2021.10")),
     ROADRUNNER, Fit(APPT_125, MPICH, MPIRUN, SITE)),
    ("the image's own implementation first", needs(HYBRID, MPICH41), CRAY_FIRST,
     Fit(APPT_125, MPICH, MPIRUN, GATEWAY)),
    ("charliecloud hybrid", needs(HYBRID, MPICH41, runtime=CHARLIECLOUD), CHARLIE,
     Fit(CH_031, MPICH_SGE, MPIRUN, GATEWAY, extract_squashfs=True)),
    # An MPICH-ABI library names its ABI, not its release: enough for hybrid mode.
    ("MPICH of unknown release in hybrid mode", needs(HYBRID, ImageMpi(MpiImpl.MPICH)),
     SGE_MPICH, Fit(APPT_125, MPICH_SGE, MPIRUN, GATEWAY)),
    ("Open MPI of unknown release", needs(HYBRID, ImageMpi(MpiImpl.OPENMPI)), ROADRUNNER,
     Refusal("image uses Open MPI in hybrid mode; site roadrunner: the release of the "
             "image's Open MPI is not known, and Open MPI changes its ABI between major "
             "versions")),
    ("MPICH of unknown release in bind mode", needs(BIND, ImageMpi(MpiImpl.MPICH)), BIND_SITE,
     Refusal("image uses MPICH in bind mode; site bindable: the release of the image's MPICH "
             "is not known, and bind mode needs the site's library no older than the "
             "image's")),
    # Launchers.
    ("a launcher the flavour lacks", needs(HYBRID, MPICH41, launcher=MPIEXEC), ROADRUNNER,
     Refusal("image uses MPICH 4.1 in hybrid mode; site roadrunner: it starts MPICH 4.0.2 "
             "with mpirun, srun, not mpiexec")),
    ("srun with the other family's plugin", needs(HYBRID, OMPI4, launcher=SRUN), PMI2_SITE,
     Refusal("image uses Open MPI 4 in hybrid mode; site pmi2-only: its srun starts Open MPI "
             "4 with --mpi=pmi2; the image's Open MPI needs pmix")),
    ("only srun, with the other family's plugin", needs(HYBRID, OMPI4), PMI2_SITE,
     Refusal("image uses Open MPI 4 in hybrid mode; site pmi2-only: it starts Open MPI 4 with "
             "srun --mpi=pmi2 only, not pmix")),
    # Bind: the site's libraries replace the image's.
    ("MPICH image with the site's Cray MPICH", needs(BIND, MPICH41), CRAY_SITE,
     Fit(SING_3100, CRAY, SRUN, GATEWAY)),
    ("MVAPICH image with the site's Cray MPICH", needs(BIND, mpi(MpiImpl.MVAPICH, "2.3.7")),
     CRAY_SITE, Fit(SING_3100, CRAY, SRUN, GATEWAY)),
    ("an MPICH from before the ABI", needs(BIND, mpi(MpiImpl.MPICH, "3.0.4")), CRAY_SITE,
     Refusal("image uses MPICH 3.0.4 in bind mode; site cray: MPICH 3.0.4 predates the MPICH "
             "ABI, so only the same implementation can stand in")),
    ("no bind paths declared", needs(BIND, MPICH41), ROADRUNNER,
     Refusal("image uses MPICH 4.1 in bind mode; site roadrunner: it declares no bind paths "
             "for MPICH 4.0.2 (hybrid mode needs none)")),
    ("site MPICH older than the image's", needs(BIND, MPICH41), BIND_SITE,
     Refusal("image uses MPICH 4.1 in bind mode; site bindable: its MPICH 4.0.2 is older than "
             "the image's MPICH 4.1 (bind mode runs the image with the site's libraries)")),
    ("site MPICH as new as the image's", needs(BIND, mpi(MpiImpl.MPICH, "4.0")), BIND_SITE,
     Fit(APPT_125, MPICH_BIND, MPIRUN, GATEWAY)),
    ("site Open MPI older than the image's", needs(BIND, mpi(MpiImpl.OPENMPI, "4.1.5")),
     BIND_SITE,
     Refusal("image uses Open MPI 4 in bind mode; site bindable: its Open MPI 4.1.4 is older "
             "than the image's 4.1.5 (bind mode runs the image with the site's libraries)")),
    ("Open MPI 4.0 image with the site's 4.1", needs(BIND, mpi(MpiImpl.OPENMPI, "4.0.7")),
     BIND_SITE, Fit(APPT_125, OMPI_BIND, MPIRUN, GATEWAY)),
    ("bind mode on charliecloud alone", needs(BIND, MPICH41), CHARLIE,
     Refusal("no container runtime of site charlie fits: charliecloud has no bind mode (host "
             "MPI goes in with ch-fromhost)")),
]


@pytest.mark.parametrize(("request_", "caps", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_compatibility(request_: ContainerNeeds, caps: SiteContainerCaps,
                       expected: Fit | Refusal) -> None:
    assert check(request_, caps) == expected


@pytest.mark.parametrize(("kw", "message"), [
    ({"mode": SINGLE, "launcher": MPIRUN}, "MPI mode none runs one process: drop the launcher"),
    ({"mode": HYBRID}, "MPI mode hybrid needs the image's MPI"),
    ({"mode": BIND, "mpi": MPICH41, "launcher": NONE}, "MPI mode bind needs a launcher"),
])
def test_requests_that_contradict_themselves_are_refused_before_any_site(
        kw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidLaunch, match=message) as caught:
        ContainerNeeds(image=DOCKER, **kw)
    assert isinstance(caught.value, ContainerError)


def test_one_process_takes_launcher_none_explicitly() -> None:
    assert check(needs(launcher=NONE), SGE_MPICH) == Fit(APPT_125, None, NONE, GATEWAY)
