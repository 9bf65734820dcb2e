"""The three testbed sites, read from their site-config templates, and their accounts.

The templates `site-configs/{roadrunner,galaxy,parnass2}.yaml` (`provisioned_by: testbed`)
are the source of truth for each site's scheduler kind, partitions/queues and limits,
node shape, parallel environment and scratch root: the testbed configures Slurm and
Grid Engine from them, then fills in what only it knows (address, host key, account
keys) and writes the completed copies to its state dir.

Every site has the same three Unix accounts with keys: the community account `gwcomm`
and the accounts `gwalice` and `gwbob` (mapped to gateway users alice and bob where a
site uses mapped mode), and 500 researchers' accounts without keys for certificate
logins. Their uids are >= 1000 because Grid Engine refuses lower ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from gateway.siteconfig import SiteConfig, SiteConfigError, load_site_config
from testbed.config import TEMPLATES_ENV, TestbedError

SchedulerKind = Literal["slurm", "sge"]
# The repository's site-configs/ (this file is testbed/sites.py).
DEFAULT_TEMPLATES = Path(__file__).resolve().parents[1] / "site-configs"
# Site order fixes each site's address: site N gets host FIRST_SITE_HOST + N.
SITE_NAMES = ("roadrunner", "galaxy", "parnass2")
# Slurm's DefaultTime when a partition's limit is longer (or unlimited), in seconds.
DEFAULT_TIME_CAP = 3600


class SiteId(Protocol):
    """What names a site's namespace, links and files: its name and its index."""

    @property
    def name(self) -> str: ...

    @property
    def index(self) -> int: ...


@dataclass(frozen=True)
class SiteRef:
    """A site known by name and index only (enough for `down`)."""

    name: str
    index: int


SITE_REFS: tuple[SiteRef, ...] = tuple(SiteRef(n, i) for i, n in enumerate(SITE_NAMES))


@dataclass(frozen=True)
class Account:
    """A Unix account on every site (same name and uid everywhere)."""

    name: str
    uid: int
    # The gateway user this account is mapped to where a site uses mapped mode.
    maps_to: str | None = None


COMMUNITY = Account("gwcomm", 2001)
ACCOUNTS: tuple[Account, ...] = (
    COMMUNITY,
    Account("gwalice", 2002, maps_to="alice"),
    Account("gwbob", 2003, maps_to="bob"),
)
# Researchers' own accounts for certificate logins at scale (gwr001 ... gwr500; no keys:
# only a certificate logs them in), e.g. benchmarks/certificate_researchers.py.
RESEARCHERS: tuple[Account, ...] = tuple(Account(f"gwr{n:03d}", 2100 + n)
                                         for n in range(1, 501))
EVERY_ACCOUNT = ACCOUNTS + RESEARCHERS


@dataclass(frozen=True)
class Queue:
    """A Slurm partition or a Grid Engine cluster queue."""

    name: str
    max_seconds: int | None  # None: unlimited
    default_seconds: int
    max_nodes: int
    default: bool


@dataclass(frozen=True)
class SiteSpec:
    """One site of the testbed, as its template describes it."""

    name: str
    index: int
    kind: SchedulerKind
    cpus: int
    memory_mb: int
    queues: tuple[Queue, ...]
    scratch_root: str
    parallel_environment: str | None
    template: SiteConfig
    # The node's scratch as the template declares it (Slurm's TmpDisk); None: none.
    scratch_mb: int | None = None

    @property
    def daemons(self) -> tuple[str, ...]:
        """Process names (comm) that must run for the site to be healthy."""
        if self.kind == "slurm":
            return ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sshd")
        return ("sge_qmaster", "sge_execd", "sshd")


def templates_dir(directory: Path | None = None) -> Path:
    """Where the templates are: `directory`, $GRIDGATE_TESTBED_SITE_CONFIGS, or the repo's."""
    if directory is not None:
        return directory
    env = os.environ.get(TEMPLATES_ENV)
    return Path(env) if env else DEFAULT_TEMPLATES


def spec_from_template(config: SiteConfig, index: int) -> SiteSpec:
    """The testbed's view of one template; TestbedError if it cannot be run here."""
    where = f"site-configs/{config.name}.yaml"
    kind: SchedulerKind
    if config.scheduler.kind == "slurm":
        kind = "slurm"
    elif config.scheduler.kind == "sge":
        kind = "sge"
    else:
        raise TestbedError(f"{where}: the testbed runs slurm and sge sites, not "
                           f"{config.scheduler.kind}")
    if config.provisioned_by != "testbed":
        raise TestbedError(f"{where}: not a testbed template (set `provisioned_by: testbed`)")
    if config.scratch_root is None:
        raise TestbedError(f"{where}: scratch_root is required")
    if not config.scratch_root.startswith("/home/"):
        raise TestbedError(f"{where}: the testbed makes scratch_root inside the site's "
                           "private /home: use /home/<dir>")
    shapes = {(p.cores_per_node, p.memory_mb_per_node, p.scratch_mb_per_node)
              for p in config.partitions}
    if len(shapes) != 1:
        raise TestbedError(f"{where}: a testbed site is one node: give every partition the "
                           "same cores_per_node, memory_mb_per_node and scratch_mb_per_node")
    cpus, memory, scratch = shapes.pop()
    queues = tuple(
        Queue(name=p.name, max_seconds=p.max_walltime,
              default_seconds=min(p.max_walltime or DEFAULT_TIME_CAP, DEFAULT_TIME_CAP),
              max_nodes=p.max_nodes, default=p.default)
        for p in config.partitions)
    known = {a.name for a in ACCOUNTS}
    if config.accounts is not None:
        users = [a.user for a in ([config.accounts.community] if config.accounts.community
                                  else []) + list(config.accounts.mapped.values())]
        for user in users:
            if user not in known:
                raise TestbedError(f"{where}: account {user!r} is not a testbed account "
                                   f"(use one of {', '.join(sorted(known))})")
    return SiteSpec(
        name=config.name, index=index, kind=kind, cpus=cpus, memory_mb=memory,
        queues=queues, scratch_root=config.scratch_root,
        parallel_environment=config.scheduler.text_option("parallel_environment"), template=config,
        scratch_mb=scratch)


def load_sites(directory: Path | None = None) -> tuple[SiteSpec, ...]:
    """The three testbed sites from their templates in `templates_dir(directory)`."""
    base = templates_dir(directory)
    specs = []
    for index, name in enumerate(SITE_NAMES):
        path = base / f"{name}.yaml"
        try:
            template = load_site_config(path)
        except SiteConfigError as exc:
            raise TestbedError(f"cannot read the testbed template {path}:\n{exc.render()}") \
                from None
        if template.name != name:
            raise TestbedError(f"{path}: names site {template.name!r}, expected {name!r}")
        specs.append(spec_from_template(template, index))
    return tuple(specs)
