"""The embedded site: this host probed once at start-up (cores, memory, the MPI launcher,
the sandbox local jobs run in and its network, the container runtime), as a `SiteEntry`."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from adapters.local.sandbox import SandboxConfig, probe
from gateway.scheduling.feasibility import SiteShape
from gateway.services.sites.entry import LOCAL_SITE, SiteEntry
from gateway.services.sites.local_containers import local_containers
from gateway.settings import Settings

log = logging.getLogger(__name__)


def find_mpiexec(configured: str | None) -> str | None:
    """The local MPI launcher: configured, else next to this Python (PyPI mpich), else PATH."""
    if configured:
        return configured
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return str(beside)
    return shutil.which("mpiexec")


def _memory_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def _secret_paths(settings: Settings) -> list[Path]:
    """What local jobs must never see: the data directory and every secret outside it."""
    paths = [settings.data_dir, settings.jobs_dir, settings.store_dir,
             settings.resolved_signing_key_path]
    url = settings.resolved_database_url
    if url.startswith("sqlite:///"):
        paths.append(Path(url.removeprefix("sqlite:///").split("?")[0]))
    paths += [p for p in (settings.secrets_dir, settings.site_configs_dir) if p is not None]
    return paths


def local_sandbox(settings: Settings, mpiexec: str | None) -> tuple[SandboxConfig | None, str]:
    """The sandbox every local job runs in, probed once; or None and why there is none.

    Raises RuntimeError when `local_isolation` is "sandbox" and no sandbox works, and
    when `local_network` is "outbound" and the sandbox's network cannot be attached."""
    if settings.local_isolation == "none":
        return None, "turned off (GRIDGATE_LOCAL_ISOLATION=none)"
    config, problem = None, None
    bwrap = shutil.which("bwrap")
    run_as = None
    if bwrap is None:
        problem = "bubblewrap (bwrap) is not installed"
    elif os.geteuid() == 0:
        try:
            account = pwd.getpwnam(settings.local_job_user)
            run_as = (account.pw_uid, account.pw_gid)
        except KeyError:
            problem = f"GRIDGATE_LOCAL_JOB_USER {settings.local_job_user!r} is no account here"
        if run_as is not None and run_as[0] == 0:
            problem = "GRIDGATE_LOCAL_JOB_USER must not be root"
    if bwrap is not None and problem is None:
        # The gateway's Python (python3, mpi4py) and the MPI installation, read-only.
        read_only = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        if mpiexec:
            read_only.add(str(Path(mpiexec).resolve().parent.parent))
        config = SandboxConfig(bwrap, read_only=tuple(sorted(read_only)),
                               hidden=tuple(str(p.resolve()) for p in _secret_paths(settings)),
                               run_as=run_as)
        problem = probe(config, settings.jobs_dir)
    if problem is None and config is not None and settings.local_network == "outbound":
        return _with_outbound(config, settings), ""
    if problem is None:
        return config, ""
    if settings.local_isolation == "sandbox":
        raise RuntimeError(f"local jobs cannot be sandboxed: {problem}")
    log.warning("local jobs run unconfined, so the local site serves only this gateway's "
                "own account: %s", problem)
    return None, problem


def _with_outbound(config: SandboxConfig, settings: Settings) -> SandboxConfig:
    """The sandbox with an outbound network, probed; RuntimeError if it cannot have one
    (asked for explicitly, it must not silently be missing)."""
    slirp4netns = shutil.which("slirp4netns")
    problem = "slirp4netns is not installed (Debian package slirp4netns)"
    if slirp4netns is not None:
        config = replace(config, network="outbound", slirp4netns=slirp4netns)
        problem = probe(config, settings.jobs_dir) or ""
    if problem:
        raise RuntimeError(f"GRIDGATE_LOCAL_NETWORK=outbound, but local jobs cannot have an "
                           f"outbound network: {problem}")
    return config


def local_site(settings: Settings) -> SiteEntry:
    """The embedded site: jobs run as processes on the gateway host."""
    from adapters.local.adapter import LocalAdapter

    mpiexec = find_mpiexec(settings.local_mpiexec)
    jobs_root = settings.jobs_dir
    jobs_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    shape = SiteShape(
        name=LOCAL_SITE,
        max_nodes=1,
        cores_per_node=os.cpu_count() or 1,
        memory_mb_per_node=_memory_mb(),
        max_walltime=7 * 24 * 3600,
        mpi_launchers=frozenset({"mpirun"} if mpiexec else set()),
        mpi_flavors=frozenset({"mpich"} if mpiexec else set()),
        # A local job's scratch is its directory: the file system that holds them.
        scratch_mb_per_node=shutil.disk_usage(jobs_root).total // 2**20,
    )
    sandbox, _ = local_sandbox(settings, mpiexec)
    containers, why_none = local_containers(sandbox, jobs_root, mpiexec)
    if containers is None:
        log.info("the local site runs no container jobs: %s", why_none)
    return SiteEntry(
        name=LOCAL_SITE,
        kind="local",
        description="Processes on the gateway host",
        shape=shape,
        max_jobs=settings.local_site_max_jobs,
        # The gateway's own environment comes first on PATH, so `python3` in a local job
        # is the interpreter that has mpi4py (the embedded site shares one machine).
        adapter=LocalAdapter(jobs_root, mpiexec,
                             path=f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
                             sandbox=sandbox),
        workdir_root=str(jobs_root),
        isolation="sandbox" if sandbox is not None else "none",
        owner_only=None if sandbox is not None else pwd.getpwuid(os.geteuid()).pw_name,
        containers=containers,
    )


