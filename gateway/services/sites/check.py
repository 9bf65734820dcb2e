"""`gridgate site check`: does a site really look like its config says?

Run on the gateway host, with the gateway's own keys and pins: log in over SSH (host key
pinned), ask the scheduler for its partitions, compare them with the configured ones (and
the qualities of service jobs may name with the ones it knows), look for each MPI
launcher, ask each container runtime for its release
(gateway.services.sites.check_containers), and make sure the scratch root is a directory
the account can write.

The comparison of configured and reported partitions (`compare_partitions`) and the choice
of what to look for (`check_account`, `launchers`) are pure; `check_site` does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from adapters.batch.adapter import BatchAdapter
from adapters.batch.types import QueueInfo
from adapters.errors import AdapterError, AuthenticationFailed
from adapters.ssh import SshTransportPool
from adapters.ssh.pool import TransportPool
from adapters.transport import HostKeyMismatch, Transport
from gateway.domain.errors import Invalid
from gateway.services.sites.certificates import CertificateSigner
from gateway.services.sites.check_containers import check_runtimes, runtime_check_names
from gateway.services.sites.check_report import Check, SiteCheckReport, Status
from gateway.services.sites.remote import Login, build_adapter
from gateway.settings import Settings
from gateway.siteconfig import Account, AccountMode, MpiLauncherKind, Partition, SiteConfig

T = TypeVar("T", bound=Transport)
# Exit codes of the scratch probe script below.
_SCRATCH_MISSING, _SCRATCH_READONLY = 3, 4
# Runs as the site account; the scratch root is "$1", data and never code.
_SCRATCH_PROBE = (
    'test -d "$1" || exit 3; '
    'probe=$(mktemp -d "$1/.gridgate-check.XXXXXX" 2>/dev/null) || exit 4; '
    'rmdir "$probe"'
)
# `command -v` is a shell builtin: the launcher name is "$1", never part of the script.
_LAUNCHER_PROBE = 'command -v -- "$1"'
_SKIPPED = "not checked: the site could not be reached"


# --- pure ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CertificateAccount:
    """A certificate site's account to check with, and the gateway user it is mapped to."""

    gateway_user: str
    user: str


def check_account(config: SiteConfig) -> Account | CertificateAccount:
    """The account to check with: the community account, or the first mapped one."""
    accounts = config.accounts
    if config.descriptive or accounts is None or config.ssh is None:
        raise Invalid(f"Site '{config.name}' is descriptive: the gateway never connects to "
                      "it, so there is nothing to check live.", field="descriptive")
    if accounts.mode == AccountMode.COMMUNITY and accounts.community is not None:
        return accounts.community
    if accounts.mode == AccountMode.CERTIFICATE:
        return CertificateAccount(*next(iter(accounts.principals.items())))
    return next(iter(accounts.mapped.values()))


def launchers(config: SiteConfig) -> list[tuple[str, str]]:
    """(flavors, command) for every distinct launcher program the MPI flavors use."""
    found: dict[str, list[str]] = {}
    for flavor in config.mpi_flavors:
        if flavor.argv:
            found.setdefault(flavor.argv[0], []).append(flavor.name)
        if MpiLauncherKind.SRUN in flavor.launchers:
            found.setdefault(config.scheduler.command("srun"), []).append(flavor.name)
    return [(", ".join(dict.fromkeys(names)), command) for command, names in found.items()]


def _limit(seconds: int | None) -> str:
    if seconds is None:
        return "UNLIMITED"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    text = f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def partition_problems(partition: Partition, queue: QueueInfo) -> list[str]:
    """Where the config promises more than the scheduler grants (None: it did not say)."""
    problems = []
    if queue.available is False:
        problems.append(f"the scheduler reports it unavailable ({queue.state or 'down'})")
    if queue.max_nodes is not None and partition.max_nodes > queue.max_nodes:
        problems.append(f"max_nodes {partition.max_nodes} > the scheduler's job size limit "
                        f"{queue.max_nodes}")
    if queue.nodes_total is not None and partition.max_nodes > queue.nodes_total:
        problems.append(f"max_nodes {partition.max_nodes} > the {queue.nodes_total} nodes "
                        "the partition has")
    if queue.max_walltime is not None and (
            partition.max_walltime is None
            or partition.max_walltime > queue.max_walltime):
        problems.append(f"max_walltime {_limit(partition.max_walltime)} > the scheduler's "
                        f"{_limit(queue.max_walltime)}")
    if queue.cpus_per_node is not None and partition.cores_per_node > queue.cpus_per_node:
        problems.append(f"cores_per_node {partition.cores_per_node} > the scheduler's "
                        f"{queue.cpus_per_node}")
    biggest_job = partition.max_nodes * partition.cores_per_node
    if queue.cpus_total is not None and biggest_job > queue.cpus_total:
        problems.append(f"max_nodes x cores_per_node = {biggest_job} cores > the "
                        f"{queue.cpus_total} the scheduler has in all")
    if (queue.memory_mb_per_node is not None
            and partition.memory_mb_per_node > queue.memory_mb_per_node):
        problems.append(f"memory_mb_per_node {partition.memory_mb_per_node} > the "
                        f"scheduler's {queue.memory_mb_per_node}")
    scratch = partition.scratch_mb_per_node
    if scratch is not None and queue.scratch_mb_per_node is not None and (
            scratch > queue.scratch_mb_per_node):
        problems.append(f"scratch_mb_per_node {scratch} > the scheduler's "
                        f"{queue.scratch_mb_per_node} (jobs asking for more would never run)")
    return problems


def compare_partitions(partitions: Sequence[Partition],
                       queues: Sequence[QueueInfo]) -> list[Check]:
    """One check per configured partition: it exists and its limits fit the scheduler's."""
    reported = {q.name: q for q in queues}
    checks = []
    for partition in partitions:
        name = f"partition {partition.name}"
        queue = reported.get(partition.name)
        if queue is None:
            known = ", ".join(sorted(reported)) or "none"
            checks.append(Check(name, Status.FAIL,
                                f"the scheduler has no such partition (it has: {known})"))
            continue
        problems = partition_problems(partition, queue)
        if problems:
            checks.append(Check(name, Status.FAIL, "; ".join(problems)))
        else:
            checks.append(Check(name, Status.OK, _fits(partition)))
    return checks


def _fits(partition: Partition) -> str:
    scratch = partition.scratch_mb_per_node
    return (f"exists; {partition.max_nodes} node(s) x {partition.cores_per_node} cores, "
            f"{partition.memory_mb_per_node} MiB"
            f"{'' if scratch is None else f', {scratch} MiB scratch'}, walltime "
            f"{_limit(partition.max_walltime)} within the scheduler's limits")


def _failure(exc: AdapterError) -> str:
    if isinstance(exc, HostKeyMismatch):
        return (f"HOST KEY MISMATCH at {exc.host}:{exc.port}: the server offered "
                f"{exc.offered}, the config pins {', '.join(exc.expected) or 'nothing'}. "
                "Nothing was sent. If the site changed its key on purpose, update "
                "ssh.host_keys; otherwise treat it as an attack.")
    return exc.message


# --- live ------------------------------------------------------------------------------


def check_site(config: SiteConfig, settings: Settings,
               pool: TransportPool[T] | None = None,
               signer: CertificateSigner | None = None) -> SiteCheckReport:
    """Every check against the live site (over SSH, unless a pool is given); a certificate
    site's with certificates `signer` signs."""
    found = check_account(config)
    account: Account | Login = found if isinstance(found, Account) else _login(config, found,
                                                                               signer)
    ssh: TransportPool[Any] = SshTransportPool() if pool is None else pool
    try:
        checks = _checks(config, build_adapter(config, settings, ssh, account), account.user)
        if isinstance(account, Login) and signer is not None:
            checks.append(_other_principal_refused(config, settings, account.user, signer))
            checks.extend(_status_account(config, settings, ssh, signer))
    finally:
        if pool is None:
            ssh.close()
    return SiteCheckReport(site=config.name, account=account.user, checks=tuple(checks))


def _login(config: SiteConfig, account: CertificateAccount,
           signer: CertificateSigner | None) -> Login:
    limits = config.accounts.certificate if config.accounts else None
    if signer is None or limits is None:
        raise Invalid(f"Site '{config.name}' logs in with certificates: check it where the "
                      "gateway runs (its database and CA).", field="accounts")
    return Login(account.user, signer.credentials(config.name, account.gateway_user,
                                                  account.user, limits), limits.renew_before)


def _other_principal_refused(config: SiteConfig, settings: Settings, user: str,
                             signer: CertificateSigner) -> Check:
    """A certificate for another principal, presented for `user`, must be refused: else
    the site does not check principals, and any certificate would do for any account.
    On a connection of its own (a pooled one for `user` is logged in already)."""
    limits = config.accounts.certificate if config.accounts else None
    assert limits is not None
    stranger = Login(user, signer.stranger(limits), limits.renew_before)
    own = SshTransportPool()
    try:
        _run(build_adapter(config, settings, own, stranger), ["true"])
    except AuthenticationFailed:
        return Check("certificate-principal", Status.OK,
                     f"a certificate for another principal is refused for {user}")
    except AdapterError as exc:
        return Check("certificate-principal", Status.FAIL, _failure(exc))
    finally:
        own.close()
    return Check("certificate-principal", Status.FAIL,
                 f"the site let a certificate for another principal log in as {user}: its "
                 "AuthorizedPrincipalsFile (or AuthorizedPrincipalsCommand) must give each "
                 "account its own name only")


def _status_account(config: SiteConfig, settings: Settings, pool: TransportPool[Any],
                    signer: CertificateSigner) -> list[Check]:
    """The status account (`certificate.status_account`), when there is one, logs in."""
    limits = config.accounts.certificate if config.accounts else None
    if limits is None or limits.status_account is None:
        return []
    user = limits.status_account
    login = Login(user, signer.status(user, limits), limits.renew_before)
    try:
        status = _run(build_adapter(config, settings, pool, login), ["true"])
    except AdapterError as exc:
        return [Check("status-account", Status.FAIL, f"{user}: {_failure(exc)}")]
    return [Check("status-account", Status.OK if status == 0 else Status.FAIL,
                  f"{user} logs in with its certificate" if status == 0
                  else f"{user}: `true` exited {status}")]


def _checks(config: SiteConfig, adapter: BatchAdapter, user: str) -> list[Check]:
    ssh = config.ssh
    assert ssh is not None and config.scratch_root is not None
    where = f"{user}@{ssh.host}:{ssh.port}"
    try:
        login = _run(adapter, ["true"])
    except AdapterError as exc:
        return [Check("ssh", Status.FAIL, f"{where}: {_failure(exc)}"),
                *(Check(n, Status.SKIP, _SKIPPED) for n in _later_checks(config))]
    checks = [Check("ssh", Status.OK if login == 0 else Status.FAIL,
                    f"{where}: logged in, host key matches the pin"
                    if login == 0 else f"{where}: `true` exited {login}")]
    checks.extend(scheduler_checks(config, adapter))
    if config.scheduler.qos:
        checks.append(_qos_check(config.scheduler.qos, adapter))
    checks.extend(_launcher_checks(config, adapter))
    checks.extend(check_runtimes(config, adapter.transport, adapter.command_timeout))
    checks.append(_scratch_check(config.scratch_root, adapter))
    return checks


def scheduler_checks(config: SiteConfig, adapter: BatchAdapter) -> list[Check]:
    """The scheduler's queues against the configured partitions, when it can list them;
    the detail says what else the adapter offers (estimates, accounting, ...)."""
    kind = config.scheduler.kind
    offers = ", ".join(adapter.capabilities.names()) or "nothing beyond submit and status"
    if not adapter.capabilities.queue_snapshot:
        return [Check("scheduler", Status.SKIP, f"the {kind} adapter cannot list queues "
                                                f"(it offers: {offers})"),
                *(Check(f"partition {p.name}", Status.SKIP,
                        f"not checked: the {kind} adapter cannot list queues")
                  for p in config.partitions)]
    try:
        queues = adapter.queues()
    except AdapterError as exc:
        return [Check("scheduler", Status.FAIL, _failure(exc)),
                *(Check(f"partition {p.name}", Status.SKIP,
                        "not checked: the scheduler did not answer")
                  for p in config.partitions)]
    names = ", ".join(q.name for q in queues) or "none"
    return [Check("scheduler", Status.OK,
                  f"{kind} answers; partitions: {names}; the adapter offers: {offers}"),
            *compare_partitions(config.partitions, queues)]


def _qos_check(wanted: Sequence[str], adapter: BatchAdapter) -> Check:
    """The configured qualities of service are ones the scheduler knows (an unenforcing
    Slurm accepts any name and records it as `Unknown`)."""
    try:
        known = adapter.qualities_of_service() or []
    except AdapterError as exc:
        return Check("qos", Status.FAIL, _failure(exc))
    missing = [name for name in wanted if name not in known]
    if missing:
        return Check("qos", Status.FAIL,
                     f"the scheduler knows no QOS {', '.join(missing)} (it has: "
                     f"{', '.join(known) or 'none'})")
    return Check("qos", Status.OK, f"{', '.join(wanted)} known to the scheduler")


def _later_checks(config: SiteConfig) -> list[str]:
    return ["scheduler", *(f"partition {p.name}" for p in config.partitions),
            *(["qos"] if config.scheduler.qos else []),
            *(f"launcher {command}" for _, command in launchers(config)),
            *runtime_check_names(config), "scratch_root"]


def _run(adapter: BatchAdapter, argv: Sequence[str]) -> int:
    return adapter.transport.run(argv, timeout=adapter.command_timeout).exit_status


def _launcher_checks(config: SiteConfig, adapter: BatchAdapter) -> list[Check]:
    checks = []
    for flavors, command in launchers(config):
        name = f"launcher {command}"
        try:
            result = adapter.transport.run(["sh", "-c", _LAUNCHER_PROBE, "sh", command],
                                           timeout=adapter.command_timeout)
        except AdapterError as exc:
            checks.append(Check(name, Status.FAIL, _failure(exc)))
            continue
        path = result.stdout.decode(errors="replace").strip()
        if result.exit_status == 0 and path:
            checks.append(Check(name, Status.OK, f"found at {path} (MPI {flavors})"))
        else:
            checks.append(Check(name, Status.FAIL,
                                f"not found on the account's PATH (needed by MPI "
                                f"{flavors})"))
    return checks


def _scratch_check(scratch_root: str, adapter: BatchAdapter) -> Check:
    name = "scratch_root"
    try:
        status = _run(adapter, ["sh", "-c", _SCRATCH_PROBE, "sh", scratch_root])
    except AdapterError as exc:
        return Check(name, Status.FAIL, f"{scratch_root}: {_failure(exc)}")
    if status == 0:
        return Check(name, Status.OK, f"{scratch_root} exists and is writable")
    if status == _SCRATCH_MISSING:
        return Check(name, Status.FAIL, f"{scratch_root} does not exist (or is not a "
                                        "directory)")
    if status == _SCRATCH_READONLY:
        return Check(name, Status.FAIL, f"{scratch_root}: the account cannot create "
                                        "directories in it")
    return Check(name, Status.FAIL, f"{scratch_root}: the probe exited {status}")
