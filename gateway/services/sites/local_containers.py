"""What container jobs find on the local site, probed once at start-up: Charliecloud's
unprivileged `ch-run` (Debian package charliecloud-runtime), where the host has it and it
can make its namespaces inside the sandbox local jobs run in, and the local MPI for
hybrid MPI images.

ch-run needs an unprivileged user namespace. A gateway running as root sandboxes jobs by
switching them to an ordinary account, which may make one; an unprivileged gateway's
sandbox forbids nested user namespaces (`--disable-userns`, adapters.local.sandbox), so
there the local site offers no container runtime and says why. Images reach the site as
on any ch-run site (gateway.worker.staging.stage_image): the SIF's SquashFS partition,
unpacked once in the site's cache, which the sandbox shows the job read-only.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

from adapters.local.sandbox import SandboxConfig, probe
from containers.runtimes import MIN_RUNTIME_VERSION, LauncherKind, MpiImpl, RuntimeKind
from containers.site_caps import MpiOffer, RuntimeOffer, SiteContainerCaps
from containers.versions import Version
from gateway.services.sites.check_containers import parse_version
from gateway.services.sites.entry import LOCAL_SITE

_MPICH_VERSION = re.compile(r"MPICH Version:\s*(?P<version>[0-9]+(?:\.[0-9]+)*)")
_TIMEOUT = 30.0
_PROBED: dict[tuple[SandboxConfig | None, str | None], tuple[SiteContainerCaps | None, str]] = {}


def _run(argv: list[str]) -> tuple[bool, str]:
    """Whether `argv` exited 0, and what it said (stdout, then stderr), or why it could not
    run."""
    # ch-run will not even say its release without $USER (a service may have none).
    env = {**os.environ, "USER": pwd.getpwuid(os.geteuid()).pw_name}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT,
                              check=False, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    return done.returncode == 0, done.stdout + done.stderr


def _works(ch_checkns: str, sandbox: SandboxConfig | None, scratch: Path) -> str | None:
    """None when ch-run's namespaces can be made where local jobs run, else why not."""
    if sandbox is not None and sandbox.run_as is None:
        return ("the sandbox of a gateway not running as root forbids the nested user "
                "namespace ch-run needs")
    if sandbox is not None:
        return probe(sandbox, scratch, [ch_checkns])
    ok, said = _run([ch_checkns])
    return None if ok else said.strip()


def local_mpi(mpiexec: str | None) -> MpiOffer | None:
    """The local MPICH for hybrid images (its launcher the local site's mpiexec), when
    `mpichversion` beside that launcher says its release; None otherwise."""
    if mpiexec is None:
        return None
    found = _MPICH_VERSION.search(_run([str(Path(mpiexec).parent / "mpichversion")])[1])
    if found is None:
        return None
    return MpiOffer("mpich", MpiImpl.MPICH, Version.parse(found["version"]),
                    (LauncherKind.MPIRUN,), command=(mpiexec,))


def local_containers(sandbox: SandboxConfig | None, scratch: Path, mpiexec: str | None
                     ) -> tuple[SiteContainerCaps | None, str]:
    """The local site's container offer, or None and why it has none (`scratch`: where
    the probe may make a directory for its sandbox)."""
    # What the probe depends on: the sandbox's program and account, not its paths (a
    # process that builds several gateways, as the tests do, probes once).
    bare = None if sandbox is None else SandboxConfig(sandbox.bwrap, run_as=sandbox.run_as)
    key = (bare, mpiexec)
    if key not in _PROBED:
        _PROBED[key] = _probe(bare, scratch, mpiexec)
    return _PROBED[key]


def _probe(sandbox: SandboxConfig | None, scratch: Path, mpiexec: str | None
           ) -> tuple[SiteContainerCaps | None, str]:
    ch_run, ch_checkns = shutil.which("ch-run"), shutil.which("ch-checkns")
    if ch_run is None or ch_checkns is None:
        return None, "Charliecloud is not installed (Debian package charliecloud-runtime)"
    said = _run([ch_run, "--version"])[1]
    reported = parse_version(RuntimeKind.CHARLIECLOUD, said)
    if reported is None:
        return None, f"`ch-run --version` gave no release: {said.strip()[:200]!r}"
    oldest, needs = MIN_RUNTIME_VERSION[RuntimeKind.CHARLIECLOUD]
    if reported.version < oldest:
        return None, (f"ch-run {reported.version} is older than {oldest}, the first with "
                      f"{needs}")
    problem = _works(ch_checkns, sandbox, scratch)
    if problem is not None:
        return None, f"ch-run cannot make its namespaces where local jobs run: {problem}"
    mpi = local_mpi(mpiexec)
    runtime = RuntimeOffer(RuntimeKind.CHARLIECLOUD, reported.version, (ch_run,))
    return SiteContainerCaps(LOCAL_SITE, "local", (runtime,), (mpi,) if mpi else ()), ""
