"""A container job's launch line at a site: what `SubmitRequest.container` carries.

The site's fit (runtime, site MPI, launcher: `container_fit`, as routing chose) and the
job's container section become a `containers.launch` argv. The image is the one stage-in
put in the job directory (IMAGE_FILE: a SIF), or for ch-run the directory it unpacked the
SIF's SquashFS partition into in the site's cache, or for a registry image on a site that
reaches registries, the file a locked `apptainer pull` leaves in the site's cache
(containers.pull), run first by the batch script. A registry image the site cannot pull
(`reaches_registries: false`, or ch-run) is pulled by the gateway and staged like a SIF
file (gateway.services.images.registry_pull).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from adapters.base import ContainerLaunch, LaunchStep
from containers.binds import Bind
from containers.compat import FetchAt, Fit, Refusal
from containers.errors import ContainerError
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.pull import REGISTRY_KINDS, pull_argv
from containers.redirects import Redirects
from containers.refs import parse_image_ref
from containers.runtimes import LauncherKind, RuntimeKind
from gateway.domain.errors import GatewayError
from gateway.domain.jobspec import JobSpec
from gateway.scheduling.constraints import image_fits
from gateway.services.sites.entry import SiteEntry

# The staged image's name in the job directory (hidden: the job's files are the user's).
IMAGE_FILE = ".gridgate-image"


class ContainerRefused(GatewayError):
    """The job's container cannot be launched at this site as it stands now."""

    title = "Container refused"


def image_path(workdir: str, index: int = 0) -> str:
    """Where stage-in puts the job's image number `index` (`ContainerSpec.images`)."""
    return f"{workdir.rstrip('/')}/{IMAGE_FILE}" + (f"-{index}" if index else "")


def site_fits(spec: JobSpec, site: SiteEntry) -> dict[str, Fit]:
    """How the site runs each image of the job's container; ContainerRefused when it no
    longer can (its config changed since routing)."""
    fits = image_fits(spec, site.containers, site.name)
    if isinstance(fits, Refusal):
        raise ContainerRefused(fits.reason)
    return fits


def site_fit(spec: JobSpec, site: SiteEntry) -> Fit:
    """How the site runs the job's program (`site_fits`)."""
    assert spec.container is not None
    return site_fits(spec, site)[spec.container.image]


def gateway_ships(image: str, fit: Fit) -> bool:
    """Whether the gateway fetches the image and stage-in ships it: every SIF file, and a
    registry image the site cannot pull (its site config or its runtime says so)."""
    return parse_image_ref(image).kind not in REGISTRY_KINDS or fit.fetch_at is FetchAt.GATEWAY


@dataclass(frozen=True)
class ShippedImage:
    """An image stage-in ships: its place in `ContainerSpec.images` and how it runs."""

    index: int
    image: str
    fit: Fit


def shipped_images(spec: JobSpec, site: SiteEntry) -> list[ShippedImage]:
    """The job's images stage-in ships to `site` (ContainerRefused when the site can no
    longer run them)."""
    if spec.container is None:
        return []
    fits = site_fits(spec, site)
    return [ShippedImage(index, image, fits[image])
            for index, image in enumerate(spec.container.images)
            if gateway_ships(image, fits[image])]


def stages_image(spec: JobSpec, site: SiteEntry) -> bool:
    """Whether stage-in ships an image of the job to `site`."""
    return bool(shipped_images(spec, site))


def _launcher(spec: JobSpec, fit: Fit) -> Launcher:
    if fit.launcher is LauncherKind.NONE or fit.mpi is None:
        return Launcher()
    res = spec.resources
    per_node = res.ranks_per_node
    if (per_node is None and fit.runtime.kind is RuntimeKind.CHARLIECLOUD
            and res.ranks % res.nodes == 0):
        per_node = res.ranks // res.nodes  # ch-run --join-ct needs the count per node
    return Launcher.of(fit.mpi, fit.launcher, res.ranks, per_node, res.threads_per_rank)


def container_launch(spec: JobSpec, tag: str, workdir: str, site: SiteEntry,
                     cache_dir: str, staged: Mapping[str, str] | None = None
                     ) -> ContainerLaunch:
    """The launch line (and any pull before it) of the container job `spec` at `site`;
    `staged`: image -> where stage-in left it, when not at its `image_path` (ch-run: the
    tree it unpacked in the site's cache)."""
    container = spec.container
    assert container is not None and spec.executable is not None
    caps = site.containers
    fits = site_fits(spec, site)
    fit = fits[container.image]
    staged = staged or {}
    assert caps is not None
    try:
        prepare: list[tuple[str, ...]] = []
        paths: dict[str, str] = {}
        for index, image in enumerate(container.images):
            if gateway_ships(image, fits[image]):
                paths[image] = staged.get(image) or image_path(workdir, index)
            else:
                pull, paths[image] = pull_argv(fit.runtime, parse_image_ref(image), cache_dir)
                prepare.append(tuple(pull))
        run = ContainerRun(
            fit.runtime, paths[container.image], (spec.executable, *spec.args), workdir,
            container.mode,
            binds=tuple(Bind(b.src, b.dst, b.read_only) for b in container.binds),
            env=dict(container.environment), bind_prefixes=caps.bind_prefixes,
            site_mpi=fit.mpi, gpus=container.gpus, join_tag=tag, cwd=container.workdir,
            redirects=Redirects(container.stdin, container.stdout, container.stderr),
            # ch-run runs the tree stage-in unpacked, which has /ch/environment.
            image_environment=fit.runtime.kind is RuntimeKind.CHARLIECLOUD)
        argv = launch_argv(run, _launcher(spec, fit), caps.scheduler)
        # The steps after it: the same runtime and binds, one process each.
        then = tuple(LaunchStep(tuple(launch_argv(replace(
            run, image=paths[step.image or container.image],
            command=(step.executable, *step.args), env=dict(step.environment),
            cwd=step.workdir, redirects=Redirects(step.stdin, step.stdout, step.stderr)),
            Launcher(), caps.scheduler)), step.ignore_error) for step in container.then)
    except ContainerError as exc:
        raise ContainerRefused(f"site {site.name}: {exc.message}") from None
    return ContainerLaunch(tuple(argv), tuple(prepare), tuple(staged.values()), then,
                           container.ignore_error)
