"""Can this image run at this site, and how: pure rules over the site's declaration.

`check` returns a `Fit` (the runtime, the site MPI and the launcher to use, and where the
image is fetched) or a `Refusal` whose reason a person can act on, e.g. "image uses Open
MPI 4; site galaxy offers MPICH ABI only". Rules, in order:

1. GPUs need a site with GPUs.
2. The runtime: the one the job names, else the first of apptainer > singularity >
   charliecloud the site offers that fits: recent enough for the flags the launch lines use;
   charliecloud has no GPU option and no bind mode, and runs OCI images (docker://) and the
   SIF files the gateway fetches itself (upload:<id>, https://): ch-run cannot read a SIF,
   so the gateway extracts its SquashFS partition (`Fit.extract_squashfs`), which ch-run
   runs as it is. A SIF in a registry (oras://, library://) needs apptainer or singularity.
3. MPI, for hybrid and bind: a site MPI of the image's ABI family (MPICH ABI: MPICH, Intel
   MPI, MVAPICH, Cray MPICH; Open MPI apart). Open MPI must have the image's major version
   (its ABI and its launcher protocol change between majors). Bind mode runs the image
   with the site's libraries, so they must not be older than the image's (within one
   implementation), releases before the MPICH ABI began match only their own
   implementation, and the site must declare bind paths. srun needs the family's plugin
   (pmi2 for the MPICH family, pmix for Open MPI). Same implementation first, then the
   site's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from containers.errors import InvalidLaunch
from containers.refs import ImageRef, RefKind
from containers.runtimes import (
    ABI_FAMILY,
    IMPL_LABEL,
    MIN_RUNTIME_VERSION,
    RUNTIME_PREFERENCE,
    SRUN_PLUGIN_PREFIX,
    AbiFamily,
    LauncherKind,
    MpiImpl,
    MpiMode,
    RuntimeKind,
    abi_label,
    in_mpich_abi,
)
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import Version

# SIF files the gateway fetches itself (its store, its https and registry clients), so it
# can extract their SquashFS partition for charliecloud; library:// needs its own client.
GATEWAY_FETCHES_SIF = frozenset({RefKind.UPLOAD, RefKind.HTTPS, RefKind.ORAS})
# Every image the gateway can fetch and ship (docker:// pulled and converted to a SIF).
GATEWAY_FETCHES = GATEWAY_FETCHES_SIF | {RefKind.DOCKER}


@dataclass(frozen=True)
class ImageMpi:
    """The MPI an image was built with. `version` None: the release is not known (an
    MPICH-ABI library names its ABI, not its release); enough for hybrid mode in the MPICH
    family, where any of the family's launchers starts it. Open MPI and bind mode need it."""

    impl: MpiImpl
    version: Version | None = None

    @property
    def family(self) -> AbiFamily:
        return ABI_FAMILY[self.impl]

    @property
    def label(self) -> str:
        if self.version is None:
            return IMPL_LABEL[self.impl]
        return abi_label(self.impl, self.version)


@dataclass(frozen=True)
class ContainerNeeds:
    """What a job asks: its image, the image's MPI (None: none inside), the MPI mode, and
    optionally a runtime and a launcher of its choosing."""

    image: ImageRef
    mode: MpiMode
    mpi: ImageMpi | None = None
    runtime: RuntimeKind | None = None
    launcher: LauncherKind | None = None
    gpus: bool = False

    def __post_init__(self) -> None:
        # Contradictions of the request itself, whatever the site: refused once, up front.
        if self.mode is MpiMode.NONE:
            if self.launcher not in (None, LauncherKind.NONE):
                raise InvalidLaunch("MPI mode none runs one process: drop the launcher, or "
                                    "use mode hybrid or bind")
        else:
            if self.mpi is None:
                raise InvalidLaunch(f"MPI mode {self.mode.value} needs the image's MPI "
                                    "(implementation and version); an image without MPI "
                                    "runs in mode none")
            if self.launcher is LauncherKind.NONE:
                raise InvalidLaunch(f"MPI mode {self.mode.value} needs a launcher (mpirun, "
                                    "mpiexec or srun)")


class FetchAt(StrEnum):
    """Who fetches the image: the site itself, or the gateway, which then ships it."""

    SITE = "site"
    GATEWAY = "gateway"


@dataclass(frozen=True)
class Fit:
    """The image runs here with this runtime, site MPI (None in mode none) and launcher."""

    runtime: RuntimeOffer
    mpi: MpiOffer | None
    launcher: LauncherKind
    fetch_at: FetchAt
    # Charliecloud and a SIF file: the gateway fetches it and ships its SquashFS partition
    # (containers.image.sif.copy_object), the file ch-run runs.
    extract_squashfs: bool = False


@dataclass(frozen=True)
class Refusal:
    """The image cannot run here; `reason` says why, in words a person can act on."""

    reason: str


def check(needs: ContainerNeeds, caps: SiteContainerCaps) -> Fit | Refusal:
    """Whether and how the image `needs` describes runs at the site `caps` declares."""
    site = caps.site
    if needs.gpus and not caps.gpus:
        return Refusal(f"the job asks for GPUs; site {site} declares none")
    runtime = _runtime(needs, caps)
    if isinstance(runtime, Refusal):
        return runtime
    # ch-run runs a directory: the gateway fetches every image for it (pulling and
    # converting registry images itself) and ships the SIF's SquashFS partition.
    extract = runtime.kind is RuntimeKind.CHARLIECLOUD
    fetch_at = (FetchAt.SITE if needs.image.from_network and caps.reaches_registries
                and not extract else FetchAt.GATEWAY)
    if fetch_at is FetchAt.GATEWAY and needs.image.kind not in GATEWAY_FETCHES:
        return Refusal(f"site {site} cannot reach registries, and the gateway does not "
                       f"pull {needs.image.kind.value}:// images: give {needs.image.uri} "
                       "as docker://, oras://, https:// or upload:<id>")
    if needs.mode is MpiMode.NONE:
        return Fit(runtime, None, LauncherKind.NONE, fetch_at, extract)
    assert needs.mpi is not None  # ContainerNeeds refuses MPI modes without it
    mpi = _mpi(needs.mpi, needs.mode, needs.launcher, caps)
    if isinstance(mpi, Refusal):
        return mpi
    offer, launcher = mpi
    return Fit(runtime, offer, launcher, fetch_at, extract)


def _runtime_problem(offer: RuntimeOffer, needs: ContainerNeeds) -> str | None:
    """Why this runtime cannot run the job, or None."""
    least, flag = MIN_RUNTIME_VERSION[offer.kind]
    if offer.version < least:
        return f"{offer.label} is older than {least}, the first with {flag}"
    if offer.kind is RuntimeKind.CHARLIECLOUD:
        if needs.image.is_sif and needs.image.kind not in GATEWAY_FETCHES_SIF:
            return (f"charliecloud cannot run the SIF file {needs.image.uri} from a "
                    f"library: give it as upload:<id> (`gridgate upload`), an https:// URL or "
                    f"oras://, which the gateway converts for ch-run, or use apptainer")
        if needs.gpus:
            return "charliecloud cannot expose GPUs without changing the image"
        if needs.mode is MpiMode.BIND:
            return "charliecloud has no bind mode (host MPI goes in with ch-fromhost)"
    return None


def _runtime(needs: ContainerNeeds, caps: SiteContainerCaps) -> RuntimeOffer | Refusal:
    site = caps.site
    if not caps.runtimes:
        return Refusal(f"site {site} offers no container runtime")
    offered = ", ".join(r.label for r in caps.runtimes)
    if needs.runtime is not None:
        offer = caps.runtime(needs.runtime)
        if offer is None:
            return Refusal(f"site {site} offers no {needs.runtime.value} (it offers "
                           f"{offered})")
        problem = _runtime_problem(offer, needs)
        return Refusal(f"site {site}: {problem}") if problem else offer
    problems = []
    for kind in RUNTIME_PREFERENCE:
        candidate = caps.runtime(kind)
        if candidate is None:
            continue
        problem = _runtime_problem(candidate, needs)
        if problem is None:
            return candidate
        problems.append(problem)
    return Refusal(f"no container runtime of site {site} fits: {'; '.join(problems)}")


def _version_problem(image: ImageMpi, offer: MpiOffer, mode: MpiMode) -> str | None:
    """Why the site MPI `offer` (already of the image's family) does not fit, or None."""
    if image.version is None:
        if image.family is AbiFamily.MPICH and mode is MpiMode.HYBRID:
            return None
        why = ("Open MPI changes its ABI between major versions" if image.family is
               AbiFamily.OPENMPI else "bind mode needs the site's library no older than the "
               "image's")
        return f"the release of the image's {image.label} is not known, and {why}"
    if image.family is AbiFamily.OPENMPI:
        if offer.version.major != image.version.major:
            return (f"it offers {offer.label}, and Open MPI changes its ABI and launcher "
                    "between major versions")
        if mode is MpiMode.BIND and offer.version < image.version:
            return (f"its Open MPI {offer.version} is older than the image's {image.version} "
                    "(bind mode runs the image with the site's libraries)")
        return None
    if mode is MpiMode.HYBRID:
        return None  # the image's own MPICH-family library speaks PMI to any family launcher
    if offer.impl is image.impl:
        if offer.version < image.version:
            return (f"its {offer.label} is older than the image's {image.label} (bind mode "
                    "runs the image with the site's libraries)")
        return None
    for impl, ver in ((image.impl, image.version), (offer.impl, offer.version)):
        if not in_mpich_abi(impl, ver):
            return (f"{abi_label(impl, ver)} predates the MPICH ABI, so only the same "
                    "implementation can stand in")
    return None


def _launcher(offer: MpiOffer, family: AbiFamily, wanted: LauncherKind | None
              ) -> LauncherKind | str:
    """The launcher to use with `offer`, or why none fits."""
    plugin = SRUN_PLUGIN_PREFIX[family]
    fitting = [x for x in offer.launchers if x is not LauncherKind.SRUN
               or (offer.srun_mpi or "").startswith(plugin)]
    if wanted is None:
        if fitting:
            return fitting[0]
        return f"it starts {offer.label} with srun --mpi={offer.srun_mpi} only, not {plugin}"
    if wanted in fitting:
        return wanted
    if wanted in offer.launchers:
        return (f"its srun starts {offer.label} with --mpi={offer.srun_mpi}; the image's "
                f"{family.value} needs {plugin}")
    listed = ", ".join(x.value for x in offer.launchers)
    return f"it starts {offer.label} with {listed}, not {wanted.value}"


def _mpi(image: ImageMpi, mode: MpiMode, wanted: LauncherKind | None,
         caps: SiteContainerCaps) -> tuple[MpiOffer, LauncherKind] | Refusal:
    site = caps.site
    same_family = [m for m in caps.mpi if m.family is image.family]
    if not same_family:
        offered = " and ".join(sorted({m.family.value for m in caps.mpi})) or "no MPI"
        only = " only" if caps.mpi else ""
        return Refusal(f"image uses {image.label}; site {site} offers {offered}{only}")
    # The image's own implementation first, then the site's order.
    same_family.sort(key=lambda m: m.impl is not image.impl)
    problems = []
    for offer in same_family:
        if mode is MpiMode.BIND and not offer.bind_paths:
            problem: str | None = (f"it declares no bind paths for {offer.label} (hybrid mode "
                                   "needs none)")
        else:
            problem = _version_problem(image, offer, mode)
        if problem is None:
            launcher = _launcher(offer, image.family, wanted)
            if isinstance(launcher, LauncherKind):
                return offer, launcher
            problem = launcher
        problems.append(problem)
    return Refusal(f"image uses {image.label} in {mode.value} mode; site {site}: "
                   f"{'; '.join(problems)}")
