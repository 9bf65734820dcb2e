"""The sites this gateway can submit to: their shape, their adapter, their rows."""

from __future__ import annotations

import logging
import os
import pwd
import re
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session, sessionmaker

from adapters.base import Adapter
from adapters.local.sandbox import SandboxConfig, probe
from containers.site_caps import SiteContainerCaps
from gateway.accounting.rates import ONE_SU_PER_CORE_HOUR, Rate
from gateway.db.engine import transaction
from gateway.domain.errors import Invalid
from gateway.repositories import sites as site_rows
from gateway.repositories.money import rate_cards
from gateway.repositories.sites import Admission
from gateway.scheduling.constraints import LabelRules
from gateway.scheduling.feasibility import SiteShape
from gateway.settings import Settings
from gateway.siteconfig.routing import DEFAULT_TRANSFER_RATE_MB_S

if TYPE_CHECKING:
    from adapters.ssh.pool import TransportPool
    from gateway.db.bank_models import RateCard
    from gateway.db.models import Site

log = logging.getLogger(__name__)

LOCAL_SITE = "local"
CACHE_DIR = ".gridgate-cache"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")
# Enabled/drained flags change rarely; submissions may see them this many seconds late.
ADMISSION_TTL_SECONDS = 2.0


@dataclass(frozen=True)
class SiteEntry:
    """One configured site."""

    name: str
    kind: str
    description: str
    shape: SiteShape
    max_jobs: int
    # The community account's adapter (or the gateway's own, for the local site); on a
    # mapped site, the first mapped account's, used only for site-wide questions.
    adapter: Adapter
    workdir_root: str
    # Mapped sites: gateway username -> the adapter that acts as that user's own account.
    mapped: Mapping[str, Adapter] | None = None
    # The local site: "sandbox" (each job confined) or "none"; None on other sites.
    isolation: str | None = None
    # Unconfined local site: the one gateway username (the OS account that runs the
    # gateway) it serves, since its jobs act as that account.
    owner_only: str | None = None
    # Routing (site config `routing`): labels required or refused, relative speed, and
    # the transfer rate assumed until one is measured.
    labels: LabelRules = field(default_factory=LabelRules)
    speed: float = 1.0
    transfer_rate_mb_s: float = DEFAULT_TRANSFER_RATE_MB_S
    # What a job costs here (site config `charge_factor` and `charging`).
    rate: Rate = ONE_SU_PER_CORE_HOUR
    # What container jobs find here (site config `containers`); None: none run here.
    containers: SiteContainerCaps | None = None

    def workdir(self, tag: str) -> str:
        """The directory an attempt with this tag runs in."""
        return f"{self.workdir_root.rstrip('/')}/{tag}"

    def cache_dir(self, username: str | None) -> str:
        """The staging cache (content by sha256) beside the job directories, so cached
        files hard-link into them; one per account on a site that maps accounts."""
        root = self.workdir_root.rstrip("/")
        if self.mapped is None:
            return f"{root}/{CACHE_DIR}"
        return f"{root}/{CACHE_DIR}-{_SAFE_NAME.sub('_', username or '')}"

    def serves(self, username: str | None) -> bool:
        """Whether this user's jobs can run here (always, unless the site maps accounts
        or is an unconfined local site)."""
        if self.owner_only is not None:
            return username == self.owner_only
        return self.mapped is None or (username is not None and username in self.mapped)

    def adapter_for(self, username: str | None) -> Adapter:
        """The adapter that runs, follows and reads this user's jobs.

        Raises NoAccount on a mapped site where the user has no account, and on an
        unconfined local site for anyone but the gateway's own account."""
        if self.owner_only is not None and username != self.owner_only:
            raise NotIsolated(self.name, self.owner_only)
        if self.mapped is None:
            return self.adapter
        adapter = self.mapped.get(username or "")
        if adapter is None:
            raise NoAccount(self.name, username)
        return adapter


class NoAccount(Invalid):
    """A mapped site has no account for this gateway user."""

    def __init__(self, site: str, username: str | None) -> None:
        who = f"gateway user '{username}'" if username else "users without a gateway username"
        super().__init__(f"Site '{site}' runs jobs under each user's own account and has none "
                         f"for {who}; ask the site's administrators to map you, or choose "
                         "another site.", field="site")


class NotIsolated(NoAccount):
    """The local site cannot confine jobs, so it runs only the gateway account's own."""

    def __init__(self, site: str, owner: str) -> None:
        Invalid.__init__(self, f"Site '{site}' runs jobs unconfined, as the gateway's own "
                         f"account, so it only takes jobs of gateway user '{owner}'. Choose "
                         "another site, or ask the administrators to install bubblewrap "
                         "(bwrap) so local jobs are sandboxed.", field="site")


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
    shape = SiteShape(
        name=LOCAL_SITE,
        max_nodes=1,
        cores_per_node=os.cpu_count() or 1,
        memory_mb_per_node=_memory_mb(),
        max_walltime=7 * 24 * 3600,
        mpi_launchers=frozenset({"mpirun"} if mpiexec else set()),
        mpi_flavors=frozenset({"mpich"} if mpiexec else set()),
    )
    jobs_root = settings.jobs_dir
    jobs_root.mkdir(parents=True, exist_ok=True, mode=0o700)
    sandbox, _ = local_sandbox(settings, mpiexec)
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
    )


class SiteRegistry:
    """Name -> configured site. Enabled/drained flags live in the database."""

    def __init__(self, entries: list[SiteEntry], *,
                 initially_drained: set[str] | None = None) -> None:
        self._entries = {entry.name: entry for entry in entries}
        self._initially_drained = initially_drained or set()
        self._pool: TransportPool[Any] | None = None
        self._admission: tuple[float, dict[str, Admission]] = (0.0, {})
        # Each site's current rate card, as `sync` made sure of it (a site's rate changes
        # only with its config, which the gateway reads at start).
        self.rate_cards: dict[str, RateCard] = {}

    @classmethod
    def from_settings(cls, settings: Settings,
                      pool: TransportPool[Any] | None = None) -> SiteRegistry:
        """The local site (unless disabled) and every reachable site configured in
        `settings.site_configs_dir`; descriptive (seed) configs are never connected.
        Remote sites are reached over SSH, or through `pool` when one is given (tests
        pass replaying transports); the registry closes it."""
        entries = [local_site(settings)] if settings.local_site_enabled else []
        drained: set[str] = set()
        if settings.site_configs_dir is not None:
            from adapters.ssh import SshTransportPool
            from gateway.services.sites.remote import remote_site
            from gateway.siteconfig import SiteState, load_site_configs

            pool = pool if pool is not None else SshTransportPool()
            for config in load_site_configs(settings.site_configs_dir):
                if config.descriptive:
                    continue
                entries.append(remote_site(config, settings, pool))
                if config.state == SiteState.DRAINED:
                    drained.add(config.name)
        registry = cls(entries, initially_drained=drained)
        registry._pool = pool
        return registry

    def close(self) -> None:
        """Close the SSH connections of remote sites."""
        if self._pool is not None:
            self._pool.close()

    def __iter__(self) -> Iterator[SiteEntry]:
        return iter(self._entries.values())

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> SiteEntry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise Invalid(f"Unknown site '{name}'. Known sites: {known}.", field="site") from None

    def admission(self, session: Session) -> Mapping[str, Admission]:
        """Each site's enabled/drained flags, read at most every ADMISSION_TTL_SECONDS."""
        expires, value = self._admission
        now = time.monotonic()
        if now < expires:
            return value
        value = site_rows.admissions(session)
        self._admission = (now + ADMISSION_TTL_SECONDS, value)
        return value

    def rows(self, session: Session) -> dict[str, Site]:
        """The database row of each site, by name (flags and last seen status)."""
        return {row.name: row for row in site_rows.all_sites(session)}

    def sync(self, sessions: sessionmaker[Session]) -> None:
        """Make sure every configured site has a row; keep admins' enabled/drained flags."""
        configured = [site_rows.ConfiguredSite(
            entry.name, entry.kind,
            {"description": entry.description, "max_jobs": entry.max_jobs},
            drained_when_new=entry.name in self._initially_drained) for entry in self]
        with transaction(sessions) as session:
            site_rows.ensure_rows(session, configured)
            for entry in self:
                card = rate_cards.ensure_current(session, entry.name, entry.rate)
                session.expunge(card)
                self.rate_cards[entry.name] = card
