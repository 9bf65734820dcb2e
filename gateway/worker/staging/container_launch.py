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

from dataclasses import replace

from adapters.base import ContainerLaunch, LaunchStep
from containers.binds import Bind
from containers.compat import FetchAt, Fit, Refusal
from containers.errors import ContainerError
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.pull import REGISTRY_KINDS, pull_argv
from containers.redirects import Redirects
from containers.runtimes import LauncherKind, RuntimeKind
from gateway.domain.errors import GatewayError
from gateway.domain.jobspec import JobSpec
from gateway.scheduling.constraints import container_fit
from gateway.services.sites.entry import SiteEntry

# The staged image's name in the job directory (hidden: the job's files are the user's).
IMAGE_FILE = ".gridgate-image"


class ContainerRefused(GatewayError):
    """The job's container cannot be launched at this site as it stands now."""

    title = "Container refused"


def image_path(workdir: str) -> str:
    return f"{workdir.rstrip('/')}/{IMAGE_FILE}"


def site_fit(spec: JobSpec, site: SiteEntry) -> Fit:
    """How the site runs the job's container; ContainerRefused when it no longer can (its
    config changed since routing)."""
    fit = container_fit(spec, site.containers, site.name)
    if isinstance(fit, Refusal):
        raise ContainerRefused(fit.reason)
    return fit


def gateway_ships(spec: JobSpec, fit: Fit) -> bool:
    """Whether the gateway fetches the image and stage-in ships it: every SIF file, and a
    registry image the site cannot pull (its site config or its runtime says so)."""
    assert spec.container is not None
    return spec.container.ref.kind not in REGISTRY_KINDS or fit.fetch_at is FetchAt.GATEWAY


def stages_image(spec: JobSpec, site: SiteEntry) -> bool:
    """Whether stage-in ships the job's image to `site` (ContainerRefused when the site
    can no longer run it)."""
    return spec.container is not None and gateway_ships(spec, site_fit(spec, site))


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
                     cache_dir: str, staged_image: str | None = None) -> ContainerLaunch:
    """The launch line (and any pull before it) of the container job `spec` at `site`;
    `staged_image`: where stage-in left the image, when not at IMAGE_FILE."""
    container = spec.container
    assert container is not None and spec.executable is not None
    caps = site.containers
    fit = site_fit(spec, site)
    assert caps is not None
    try:
        prepare: tuple[tuple[str, ...], ...] = ()
        image = staged_image or image_path(workdir)
        if not gateway_ships(spec, fit):
            pull, image = pull_argv(fit.runtime, container.ref, cache_dir)
            prepare = (tuple(pull),)
        run = ContainerRun(
            fit.runtime, image, (spec.executable, *spec.args), workdir, container.mode,
            binds=tuple(Bind(b.src, b.dst, b.read_only) for b in container.binds),
            env=dict(container.environment), bind_prefixes=caps.bind_prefixes,
            site_mpi=fit.mpi, gpus=container.gpus, join_tag=tag, cwd=container.workdir,
            redirects=Redirects(container.stdin, container.stdout, container.stderr),
            # ch-run runs the tree stage-in unpacked, which has /ch/environment.
            image_environment=fit.runtime.kind is RuntimeKind.CHARLIECLOUD)
        argv = launch_argv(run, _launcher(spec, fit), caps.scheduler)
        # The steps after it: the same image and binds, one process each.
        then = tuple(LaunchStep(tuple(launch_argv(replace(
            run, command=(step.executable, *step.args), env=dict(step.environment),
            cwd=step.workdir, redirects=Redirects(step.stdin, step.stdout, step.stderr)),
            Launcher(), caps.scheduler)), step.ignore_error) for step in container.then)
    except ContainerError as exc:
        raise ContainerRefused(f"site {site.name}: {exc.message}") from None
    return ContainerLaunch(tuple(argv), prepare, (staged_image,) if staged_image else (),
                           then, container.ignore_error)
