"""Remote sites: a validated site config becomes a SiteEntry whose adapter speaks the
site's scheduler over a pooled, host-key-pinned SSH transport."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from adapters.base import Adapter
from adapters.scheduler import BatchAdapter
from adapters.scheduler_types import DialectConfig, MpiFlavor, SchedulerDialect
from adapters.sge.commands import SgeCommands
from adapters.sge.dialect import SgeDialect
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.dialect import SlurmDialect
from adapters.ssh import SshTarget, SshTransportPool
from gateway.domain.errors import Invalid
from gateway.services.sites import LOCAL_SITE, SiteEntry
from gateway.settings import Settings
from gateway.siteconfig import (
    Account,
    AccountMode,
    SchedulerKind,
    SiteConfig,
    resolve_key_path,
    site_shape,
)


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
    scheduler, dialect_config = config.scheduler, _dialect_config(config)
    if scheduler.kind == SchedulerKind.SLURM:
        slurm = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "srun")
        return SlurmDialect(dialect_config,
                            SlurmCommands(**{n: scheduler.command(n) for n in slurm}))
    if scheduler.kind == SchedulerKind.SGE:
        sge = ("qsub", "qstat", "qacct", "qdel")
        return SgeDialect(dialect_config, SgeCommands(**{n: scheduler.command(n) for n in sge}),
                          parallel_environment=scheduler.parallel_environment)
    # PBS and LSF speak through the same adapter once a live site exists to test them on.
    raise Invalid(f"Site '{config.name}': the gateway does not drive {scheduler.kind.value} "
                  "sites over SSH yet; their command builders and parsers are tested on "
                  "recorded outputs only.", field="scheduler.kind")


def _target(config: SiteConfig, account: Account, settings: Settings) -> SshTarget:
    ssh = config.ssh
    assert ssh is not None  # a remote, non-descriptive config always has ssh
    jump = None
    if ssh.jump_host is not None:
        hop = ssh.jump_host
        jump = SshTarget(host=hop.host, port=hop.port, user=hop.user,
                         host_keys=tuple(hop.host_keys),
                         key_path=str(resolve_key_path(hop.key, settings.secrets_dir)),
                         site=config.name, connect_timeout=ssh.connect_timeout_seconds)
    return SshTarget(host=ssh.host, port=ssh.port, user=account.user,
                     host_keys=tuple(ssh.host_keys),
                     key_path=str(resolve_key_path(account.key, settings.secrets_dir)),
                     jump=jump, site=config.name,
                     connect_timeout=ssh.connect_timeout_seconds)


def build_adapter(config: SiteConfig, settings: Settings, pool: SshTransportPool,
                  account: Account) -> BatchAdapter:
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


def remote_site(config: SiteConfig, settings: Settings, pool: SshTransportPool) -> SiteEntry:
    """The SiteEntry for a reachable (non-descriptive) remote site config."""
    if config.name == LOCAL_SITE:
        raise Invalid(f"A site config may not be named '{LOCAL_SITE}': that is the embedded "
                      "site.", field="name")
    accounts = config.accounts
    assert accounts is not None and config.scratch_root is not None
    mapped: dict[str, Adapter] | None = None
    if accounts.mode == AccountMode.COMMUNITY:
        assert accounts.community is not None  # the schema requires it in this mode
        adapter: Adapter = build_adapter(config, settings, pool, accounts.community)
    else:
        # Each mapped user acts through their own account: a job runs under that Unix
        # uid, and the site's own permissions keep users apart.
        mapped = {user: build_adapter(config, settings, pool, account)
                  for user, account in accounts.mapped.items()}
        adapter = next(iter(mapped.values()))
    # Job directories sit side by side under the scratch root (sticky and world-writable
    # on a mapped site), each created 0700 by the account that runs the job.
    return SiteEntry(name=config.name, kind=config.scheduler.kind.value,
                     description=config.description, shape=site_shape(config),
                     max_jobs=config.max_concurrent_jobs, adapter=adapter,
                     workdir_root=config.scratch_root.rstrip("/"), mapped=mapped)
