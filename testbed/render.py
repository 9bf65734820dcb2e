"""The text of every file a testbed site needs: pure functions of the site and its address.

Each site sees these files at their standard paths (bind mounts made by its holder,
see `testbed.holder`), so the daemons run with their stock defaults wherever
possible.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping

from testbed.sites import EVERY_ACCOUNT, Account, Queue, SiteSpec

SGE_ROOT = "/var/lib/gridengine"
SGE_CELL = "default"
SGE_SPOOL = "/var/spool/gridengine"
HOLDER_READY = "/run/.gridgate-holder-ready"


def hosts(site: SiteSpec, ip: ipaddress.IPv4Address) -> str:
    """/etc/hosts: the site's own name resolves to its real address (Grid Engine needs it)."""
    return (f"127.0.0.1\tlocalhost\n{ip}\t{site.name}\n"
            "::1\tlocalhost ip6-localhost ip6-loopback\n")


def passwd(host_passwd: str, accounts: Iterable[Account] = EVERY_ACCOUNT) -> str:
    """The host's /etc/passwd plus the test accounts (bash, home under /home)."""
    return _merge(host_passwd, accounts,
                  lambda a: f"{a.name}:x:{a.uid}:{a.uid}:gridgate testbed:/home/{a.name}:/bin/bash")


def group(host_group: str, accounts: Iterable[Account] = EVERY_ACCOUNT) -> str:
    """The host's /etc/group plus one group per test account."""
    return _merge(host_group, accounts, lambda a: f"{a.name}:x:{a.uid}:")


def shadow(host_shadow: str, accounts: Iterable[Account] = EVERY_ACCOUNT) -> str:
    """The host's /etc/shadow plus the test accounts.

    The password field is `*` (no password, not locked): with `UsePAM no`, sshd refuses
    key logins for a `!` (locked) account.
    """
    return _merge(host_shadow, accounts, lambda a: f"{a.name}:*:19000:0:99999:7:::")


def _merge(host_text: str, accounts: Iterable[Account], line: Callable[[Account], str]) -> str:
    accounts = list(accounts)
    names = {a.name for a in accounts}
    kept = [ln for ln in host_text.splitlines() if ln and ln.split(":", 1)[0] not in names]
    return "\n".join([*kept, *(line(a) for a in accounts)]) + "\n"


# The CA keys a site's sshd trusts for certificate logins (empty: none), in its own /etc.
TRUSTED_CA = "/etc/ssh/gridgate-trusted-ca.pub"


def sshd_config(ip: ipaddress.IPv4Address, port: int = 22,
                wan_ip: ipaddress.IPv4Address | None = None, *,
                host_key: str = "/etc/ssh/ssh_host_ed25519_key",
                pid_file: str = "/run/sshd.pid") -> str:
    """sshd: key logins only, its own ed25519 host key, room for many parallel logins; on
    the site's address and, when given, the site end of its WAN link."""
    wan = f"ListenAddress {wan_ip}\n" if wan_ip is not None else ""
    return f"""\
# gridgate testbed site sshd
Port {port}
ListenAddress {ip}
{wan}HostKey {host_key}
PidFile {pid_file}
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
AuthorizedKeysFile .ssh/authorized_keys
# Certificate logins (testbed.trusted_ca writes the CA keys; read at each login).
TrustedUserCAKeys {TRUSTED_CA}
StrictModes yes
UseDNS no
PrintMotd no
X11Forwarding no
AllowTcpForwarding yes
# The stock 10:30:100 throttles parallel logins (tests and benchmarks open many).
MaxStartups 200:30:400
MaxSessions 200
LoginGraceTime 30
AcceptEnv LANG LC_*
# Debian's (and most sites') default: sftp-server is a process of its own, so sshd
# decrypts on one core while it writes on another (internal-sftp does both in sshd).
Subsystem sftp /usr/lib/openssh/sftp-server
"""


def slurm_time(seconds: int | None) -> str:
    """Slurm's D-HH:MM:SS (or UNLIMITED)."""
    if seconds is None:
        return "UNLIMITED"
    days, rest = divmod(seconds, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def _partition(site: SiteSpec, queue: Queue) -> str:
    parts = [
        f"PartitionName={queue.name}", f"Nodes={site.name}",
        f"Default={'YES' if queue.default else 'NO'}",
        f"MaxTime={slurm_time(queue.max_seconds)}",
        # Without a DefaultTime, `sbatch --test-only` predicts starts a year away.
        f"DefaultTime={slurm_time(queue.default_seconds)}",
        f"MaxNodes={queue.max_nodes}", "State=UP",
    ]
    return " ".join(parts)


def slurm_conf(site: SiteSpec, ip: ipaddress.IPv4Address) -> str:
    """slurm.conf for a one-node cluster whose controller, node and slurmdbd are the site."""
    partitions = "\n".join(_partition(site, q) for q in site.queues)
    # The node's scratch (TmpFS, /tmp by default) as the template declares it.
    node = f"NodeName={site.name} NodeAddr={ip} CPUs={site.cpus} RealMemory={site.memory_mb}"
    if site.scratch_mb is not None:
        node += f" TmpDisk={site.scratch_mb}"
    return f"""\
# gridgate testbed: Slurm cluster {site.name}
ClusterName={site.name}
SlurmctldHost={site.name}({ip})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: sites share one kernel, and process tracking by /proc is enough here.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost={site.name}
AccountingStoreFlags=job_comment
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Slurm otherwise waits ~3 s before starting a batch job.
SchedulerParameters=batch_sched_delay=0
# Refuse at submission a job no partition could ever run (else it pends forever).
EnforcePartLimits=ALL
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
MinJobAge=300
KillWait=5
# A requeued job may start again only after the step credential expires (default 120 s).
AuthInfo=cred_expire=30
OverTimeLimit=0
InactiveLimit=0
Waittime=0
SlurmctldTimeout=30
SlurmdTimeout=60
{node} State=UNKNOWN
{partitions}
"""


def slurmdbd_conf(site: SiteSpec) -> str:
    """slurmdbd.conf: the site's private MariaDB over its unix socket (root via unix_socket)."""
    return f"""\
# gridgate testbed: accounting for {site.name}
AuthType=auth/munge
DbdHost={site.name}
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=/run/slurmdbd.pid
LogFile=/var/log/slurm/slurmdbd.log
DebugLevel=info
"""


def mariadb_args() -> list[str]:
    """mariadbd's command line: no TCP at all, small memory, durability off (a test DB)."""
    return [
        "--no-defaults", "--user=mysql", "--datadir=/var/lib/mysql",
        "--socket=/run/mysqld/mysqld.sock", "--pid-file=/run/mysqld/mysqld.pid",
        "--skip-networking", "--skip-name-resolve",
        "--log-error=/var/log/mysql/error.log",
        "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M",
        "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
        "--performance-schema=OFF", "--max-connections=50",
    ]


# --- Grid Engine ---------------------------------------------------------------------

def sge_bootstrap() -> str:
    """The cell's bootstrap file (as Debian's package writes it)."""
    return f"""\
# Version: 6.2
admin_user              sgeadmin
default_domain          none
ignore_fqdn             false
spooling_method         berkeleydb
spooling_lib            libspoolb
spooling_params         {SGE_SPOOL}/spooldb
binary_path             /usr/sbin
qmaster_spool_dir       {SGE_SPOOL}/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
"""


def sge_settings_sh() -> str:
    return (f"SGE_ROOT={SGE_ROOT}; export SGE_ROOT\nSGE_CELL={SGE_CELL}; export SGE_CELL\n"
            "SGE_ARCH=lx-amd64; export SGE_ARCH\n")


# Global configuration overrides on top of the package's default-configuration.
SGE_GLOBAL_OVERRIDES: Mapping[str, str] = {
    "execd_spool_dir": f"{SGE_SPOOL}/execd",
    "mailer": "/bin/true",
    "min_uid": "1000",
    "min_gid": "1000",
    "load_report_time": "00:00:10",
    # Without accounting_flush_time=0, qacct lags ~15 s behind a finished job.
    "reporting_params": "accounting=true reporting=false flush_time=00:00:01 "
                        "joblog=false sharelog=00:00:00 accounting_flush_time=00:00:00",
    "finished_jobs": "100",
}


def sge_global_config(default_configuration: str) -> str:
    """The package's default global configuration with the testbed's overrides."""
    lines: list[str] = []
    seen: set[str] = set()
    for line in default_configuration.splitlines():
        fields = line.split(None, 1)
        if fields and not line.startswith("#") and fields[0] in SGE_GLOBAL_OVERRIDES:
            lines.append(f"{fields[0]:<22} {SGE_GLOBAL_OVERRIDES[fields[0]]}")
            seen.add(fields[0])
        else:
            lines.append(line)
    lines += [f"{k:<22} {v}" for k, v in SGE_GLOBAL_OVERRIDES.items() if k not in seen]
    return "\n".join(lines) + "\n"


def sge_host(hostname: str) -> str:
    """An admin or submit host object."""
    return f"hostname {hostname}\n"


def sge_exechost(hostname: str) -> str:
    return f"""\
hostname              {hostname}
load_scaling          NONE
complex_values        NONE
user_lists            NONE
xuser_lists           NONE
projects              NONE
xprojects             NONE
usage_scaling         NONE
report_variables      NONE
"""


def sge_time(seconds: int | None) -> str:
    """Grid Engine's HH:MM:SS (hours may exceed 24), or INFINITY."""
    if seconds is None:
        return "INFINITY"
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def sge_queue(site: SiteSpec, queue: Queue) -> str:
    """A cluster queue on the site's one host, open to the MPI parallel environment."""
    pe_list = site.parallel_environment or "NONE"
    h_rt = sge_time(queue.max_seconds)
    # load_thresholds NONE: the shared 2-core machine's load must not put queues in alarm.
    return f"""\
qname                 {queue.name}
hostlist              {site.name}
seq_no                {site.queues.index(queue)}
load_thresholds       NONE
suspend_thresholds    NONE
nsuspend              1
suspend_interval      00:05:00
priority              0
min_cpu_interval      00:05:00
processors            UNDEFINED
qtype                 BATCH INTERACTIVE
ckpt_list             NONE
pe_list               {pe_list}
rerun                 FALSE
slots                 {site.cpus}
tmpdir                /tmp
shell                 /bin/sh
prolog                NONE
epilog                NONE
shell_start_mode      posix_compliant
starter_method        NONE
suspend_method        NONE
resume_method         NONE
terminate_method      NONE
notify                00:00:60
owner_list            NONE
user_lists            NONE
xuser_lists           NONE
subordinate_list      NONE
complex_values        NONE
projects              NONE
xprojects             NONE
calendar              NONE
initial_state         default
s_rt                  INFINITY
h_rt                  {h_rt}
s_cpu                 INFINITY
h_cpu                 INFINITY
s_fsize               INFINITY
h_fsize               INFINITY
s_data                INFINITY
h_data                INFINITY
s_stack               INFINITY
h_stack               INFINITY
s_core                INFINITY
h_core                INFINITY
s_rss                 INFINITY
h_rss                 INFINITY
s_vmem                INFINITY
h_vmem                INFINITY
"""


def sge_pe(name: str, slots: int) -> str:
    """A tightly integrated MPI parallel environment (Open MPI and MPICH/Hydra detect it)."""
    return f"""\
pe_name            {name}
slots              {slots}
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $fill_up
control_slaves     TRUE
job_is_first_task  FALSE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
"""


# Scheduler configuration keys changed from qmaster's defaults: start jobs within ~1 s.
SGE_SCHED_OVERRIDES: Mapping[str, str] = {
    "schedule_interval": "0:0:1",
    "flush_submit_sec": "1",
    "flush_finish_sec": "1",
}


def sge_sched_config(current: str) -> str:
    """`qconf -ssconf` output with the overrides applied (continuation lines joined)."""
    joined = current.replace("\\\n", "")
    out = []
    for line in joined.splitlines():
        fields = line.split(None, 1)
        if fields and fields[0] in SGE_SCHED_OVERRIDES:
            out.append(f"{fields[0]:<33} {SGE_SCHED_OVERRIDES[fields[0]]}")
        else:
            out.append(line)
    return "\n".join(out) + "\n"
