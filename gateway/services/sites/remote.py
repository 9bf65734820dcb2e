"""Remote sites: a validated site config becomes a SiteEntry whose adapter speaks the
site's scheduler (found in the scheduler registry) over a pooled transport.

The pool is the seam: the gateway passes an `SshTransportPool` (pinned host keys), and
tests pass a `TransportPool` of `adapters.testing.ReplayTransport`s, so every layer
above the transport runs as it does against a real site.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from adapters import registry
from adapters.base import Adapter
from adapters.batch.adapter import BatchAdapter
from adapters.batch.entry import DialectSettings
from adapters.batch.types import DialectConfig, MpiFlavor, SchedulerDialect
from adapters.errors import UnknownScheduler
from adapters.ssh import SshTarget
from adapters.ssh.certificates import UserCertificate
from adapters.ssh.pool import TransportPool
from adapters.transport import Transport
from gateway.domain.errors import Invalid
from gateway.services.sites.certificates import CertificateSigner
from gateway.services.sites.entry import LOCAL_SITE, SiteEntry
from gateway.settings import Settings
from gateway.siteconfig import (
    Account,
    AccountMode,
    SiteConfig,
    resolve_key_path,
    site_shape,
)

T = TypeVar("T", bound=Transport)


def _dialect_config(config: SiteConfig) -> DialectConfig:
    scheduler = config.scheduler
    return DialectConfig(
        default_queue=config.default_partition.name,
        default_account=scheduler.account,
        mpi_flavors=tuple(
            MpiFlavor(name=f.name, mpirun=tuple(f.argv),
                      ranks_per_node_args=tuple(f.ranks_per_node_args),
                      srun_mpi=f.srun_mpi, setup=tuple(f.setup))
            for f in config.mpi_flavors),
        extra_submit_args=tuple(scheduler.submit_args),
        setup=tuple(config.job_setup),
        timezone=ZoneInfo(scheduler.timezone),
    )


def _dialect(config: SiteConfig) -> SchedulerDialect:
    scheduler = config.scheduler
    try:
        return registry.dialect(scheduler.kind, DialectSettings(
            _dialect_config(config), scheduler.commands(), scheduler.options))
    except UnknownScheduler as exc:
        raise Invalid(f"Site '{config.name}': {exc.message}", field="scheduler.kind") from None


def _target(config: SiteConfig, account: Account | Login, settings: Settings) -> SshTarget:
    ssh = config.ssh
    assert ssh is not None  # a remote, non-descriptive config always has ssh
    jump = None
    if ssh.jump_host is not None:
        hop = ssh.jump_host
        jump = SshTarget(host=hop.host, port=hop.port, user=hop.user,
                         host_keys=tuple(hop.host_keys),
                         key_path=str(resolve_key_path(hop.key, settings.secrets_dir)),
                         site=config.name, connect_timeout=ssh.connect_timeout_seconds)
    if isinstance(account, Login):
        key: dict[str, Any] = {"credentials": account.credentials,
                               "renew_before": account.renew_before}
    else:
        key = {"key_path": str(resolve_key_path(account.key, settings.secrets_dir))}
    return SshTarget(host=ssh.host, port=ssh.port, user=account.user,
                     host_keys=tuple(ssh.host_keys), jump=jump, site=config.name,
                     connect_timeout=ssh.connect_timeout_seconds, **key)


@dataclass(frozen=True)
class Login:
    """An account logged into with short-lived certificates (certificate mode)."""

    user: str
    credentials: Callable[[], UserCertificate]
    # Seconds before its certificate expires that a connection takes no new commands.
    renew_before: float


def build_adapter(config: SiteConfig, settings: Settings, pool: TransportPool[T],
                  account: Account | Login) -> BatchAdapter:
    """A BatchAdapter speaking `config`'s scheduler as `account`, over a pooled transport.

    Nothing connects yet: the first command opens the connection.
    """
    ssh = config.ssh
    if ssh is None or config.scratch_root is None:
        raise Invalid(f"Site '{config.name}' has no ssh section or scratch_root: the gateway "
                      "cannot reach it.", field="ssh")
    transport = pool.get(_target(config, account, settings))
    return BatchAdapter(transport, _dialect(config),
                        command_timeout=ssh.command_timeout_seconds)


def remote_site(config: SiteConfig, settings: Settings, pool: TransportPool[T],
                signer: CertificateSigner | None = None) -> SiteEntry:
    """The SiteEntry for a reachable (non-descriptive) remote site config (`signer`:
    what signs the certificates of a certificate-mode site)."""
    if config.name == LOCAL_SITE:
        raise Invalid(f"A site config may not be named '{LOCAL_SITE}': that is the embedded "
                      "site.", field="name")
    accounts = config.accounts
    assert accounts is not None and config.scratch_root is not None
    mapped: dict[str, Adapter] | None = None
    status: Adapter | None = None
    if accounts.mode == AccountMode.COMMUNITY:
        assert accounts.community is not None  # the schema requires it in this mode
        adapter: Adapter = build_adapter(config, settings, pool, accounts.community)
        names = {"": accounts.community.user}
    else:
        # Each mapped user acts through their own account: a job runs under that Unix
        # uid, and the site's own permissions keep users apart.
        logins: dict[str, Account | Login] = dict(accounts.mapped)
        if accounts.mode == AccountMode.CERTIFICATE:
            limits = accounts.certificate
            if signer is None or limits is None:
                raise Invalid(f"Site '{config.name}' logs in with certificates, which only a "
                              "gateway with its database can sign.", field="accounts")
            logins = {user: Login(account, signer.credentials(
                config.name, user, account, limits, accounts.projects), limits.renew_before)
                      for user, account in accounts.principals.items()}
            if limits.status_account is not None:
                status = build_adapter(config, settings, pool, Login(
                    limits.status_account, signer.status(limits.status_account, limits),
                    limits.renew_before))
        mapped = {user: build_adapter(config, settings, pool, login)
                  for user, login in logins.items()}
        adapter = status or next(iter(mapped.values()))
        names = accounts.accounts()
    # Job directories sit side by side under the scratch root (sticky and world-writable
    # on a mapped site), each created 0700 by the account that runs the job.
    return SiteEntry(name=config.name, kind=config.scheduler.kind,
                     description=config.description, shape=site_shape(config),
                     max_jobs=config.max_concurrent_jobs, adapter=adapter,
                     workdir_root=config.scratch_root.rstrip("/"), mapped=mapped,
                     labels=config.routing.label_rules(), zones=frozenset(config.routing.zones),
                     speed=config.routing.speed,
                     transfer_rate_mb_s=config.routing.transfer_rate_mb_s,
                     rate=config.charging.rate(config.charge_factor),
                     containers=config.container_caps(), accounts=names,
                     projects=frozenset(accounts.projects), status=status,
                     timezone=ZoneInfo(config.scheduler.timezone))
