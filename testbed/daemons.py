"""Start whatever daemons a site lacks, in order, each waited for until it answers.

Every daemon runs inside the site (`nsenter -t HOLDER ...`) with its stock paths,
which the holder's bind mounts make site-private. A daemon already running is left
alone, so `up` on a healthy site costs a few /proc reads.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

from testbed.config import TestbedConfig, TestbedError
from testbed.files import SGE_TEMPLATES, SitePaths
from testbed.holder import nsexec, site_path, site_processes
from testbed.render import SGE_CELL, SGE_ROOT, mariadb_args, sge_sched_config
from testbed.sites import SiteSpec

SSH_PORT = 22
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819
SGE_QMASTER_PORT = 6444
SGE_EXECD_PORT = 6445
SSHD_ARGV = ["/usr/sbin/sshd", "-f", "/etc/ssh/sshd_config", "-E", "/var/log/sshd.log"]
SGE_ENV = {"SGE_ROOT": SGE_ROOT, "SGE_CELL": SGE_CELL}
START_TIMEOUT = 60.0
# A wait longer than this is reported (progress), so a slow `up` says what it waits for.
SLOW_WAIT = 5.0
# Seconds after starting a daemon before a missing process means it must start again.
RESTART_GRACE = 3.0
# Node states in which a Slurm node takes jobs (a trailing * means not responding).
SLURM_READY_STATES = {"idle", "mixed", "allocated", "completing"}


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def unix_open(path: Path) -> bool:
    """Whether something accepts connections on the unix socket at `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def wait_until(check: Callable[[], bool], what: str, log: Path | None = None,
               timeout: float = START_TIMEOUT, progress: Callable[[str], None] | None = None
               ) -> None:
    """Poll `check` until it is true; raise TestbedError naming `what` after `timeout`."""
    started = time.monotonic()
    deadline = started + timeout
    delay = 0.01
    told = False
    while not check():
        if progress is not None and not told and time.monotonic() - started > SLOW_WAIT:
            progress(f"still waiting for {what}")
            told = True
        if time.monotonic() > deadline:
            tail = ""
            if log is not None and log.exists():
                tail = ": " + " | ".join(log.read_text(errors="replace").splitlines()[-8:])
            raise TestbedError(f"{what} not ready after {timeout:.0f}s{tail}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.2)


class SiteDaemons:
    """The daemons of one site, reached through its holder."""

    def __init__(self, config: TestbedConfig, site: SiteSpec, paths: SitePaths,
                 holder: int, progress: Callable[[str], None] | None = None) -> None:
        self.site = site
        self.paths = paths
        self.holder = holder
        self.ip = str(config.site_ip(site.index))
        self._started: dict[str, float] = {}
        self._progress = progress

    def running(self) -> set[str]:
        """Names of the site's daemons that are running now."""
        return set(site_processes(self.holder).values()) & set(self.site.daemons)

    def ensure(self) -> None:
        """Start every missing daemon and wait until the site takes jobs and logins."""
        # sshd first: it comes up while the scheduler daemons start.
        self._start_missing("sshd", SSHD_ARGV)
        if self.site.kind == "slurm":
            self._ensure_slurm()
        else:
            self._ensure_sge()
        self._ensure("sshd", SSHD_ARGV, lambda: tcp_open(self.ip, SSH_PORT), "var/log/sshd.log")

    def _start_missing(self, comm: str, argv: list[str],
                       env: dict[str, str] | None = None) -> None:
        # A daemon just started may not have exec'd or forked yet: give it a grace period.
        recent = time.monotonic() - self._started.get(comm, -RESTART_GRACE) < RESTART_GRACE
        if not recent and comm not in self.running():
            if comm in self._started and self._progress is not None:
                self._progress(f"{self.site.name}: {comm} is gone, starting it again")
            nsexec(self.holder, argv, env=env, log=self.paths.log(comm))
            self._started[comm] = time.monotonic()

    def _ensure(self, comm: str, argv: list[str], ready: Callable[[], bool], log: str,
                env: dict[str, str] | None = None) -> None:
        """Wait until `ready()`, (re)starting `comm` whenever it is not running.

        A daemon still shutting down (or crashed) is started again once it is gone.
        """
        def check() -> bool:
            if ready():
                return True
            self._start_missing(comm, argv, env)
            return False

        wait_until(check, f"{self.site.name}: {comm}", self.paths.root / log,
                   progress=self._progress)

    # --- Slurm ---------------------------------------------------------------------
    def _ensure_slurm(self) -> None:
        munged = ["setpriv", "--reuid=munge", "--regid=munge", "--clear-groups",
                  "/usr/sbin/munged"]
        mariadbd = ["setsid", "-f", "/usr/sbin/mariadbd", *mariadb_args()]
        # Both start at once; everything after them needs both.
        self._start_missing("munged", munged)
        self._start_missing("mariadbd", mariadbd)
        self._ensure("munged", munged,
                     lambda: unix_open(site_path(self.holder, "/run/munge/munge.socket.2")),
                     "var/log/munge/munged.log")
        self._ensure("mariadbd", mariadbd,
                     lambda: unix_open(site_path(self.holder, "/run/mysqld/mysqld.sock")),
                     "var/log/mysql/error.log")
        self._ensure("slurmdbd", ["/usr/sbin/slurmdbd"],
                     lambda: tcp_open(self.ip, SLURMDBD_PORT), "var/log/slurm/slurmdbd.log")
        # Before slurmctld, which reads the QOS list when it starts.
        self._ensure_qos()
        self._ensure("slurmctld", ["/usr/sbin/slurmctld"],
                     lambda: tcp_open(self.ip, SLURMCTLD_PORT), "var/log/slurm/slurmctld.log")
        self._ensure("slurmd", ["/usr/sbin/slurmd"], self._slurm_node_ready,
                     "var/log/slurm/slurmd.log")

    def _ensure_qos(self) -> None:
        """The qualities of service the template offers, made in slurmdbd (`normal` is
        always there); without AccountingStorageEnforce any account may use them. A QOS
        slurmctld does not know is accepted and recorded as `Unknown`."""
        wanted = self.site.template.scheduler.qos
        if not wanted:
            return
        have = nsexec(self.holder, ["sacctmgr", "-n", "-P", "show", "qos", "format=name"],
                      timeout=30).stdout.split()
        missing = [name for name in wanted if name not in have]
        if missing:
            nsexec(self.holder, ["sacctmgr", "-i", "add", "qos", *missing], timeout=30)

    def _slurm_node_ready(self) -> bool:
        proc = nsexec(self.holder, ["sinfo", "-h", "-N", "-o", "%T"], check=False,
                      timeout=15)
        states = proc.stdout.split()
        return bool(states) and all(s in SLURM_READY_STATES for s in states)

    # --- Grid Engine -----------------------------------------------------------------
    def _sge(self, argv: list[str], *, as_admin: bool = False,
             input_text: str | None = None) -> str:
        prefix = ["setpriv", "--reuid=sgeadmin", "--regid=sgeadmin", "--clear-groups"]
        return nsexec(self.holder, [*(prefix if as_admin else []), *argv], env=SGE_ENV,
                      input_text=input_text).stdout

    def _init_sge_spool(self) -> None:
        """Create the cell's spool from templates (what Debian's init_cluster does, and more)."""
        templates = "/" + SGE_TEMPLATES
        resources = "/usr/share/gridengine/util/resources"
        self._sge(["/usr/lib/gridengine/spoolinit", "berkeleydb", "libspoolb",
                   "/var/spool/gridengine/spooldb", "init"], as_admin=True)
        defaults = "/usr/lib/gridengine/spooldefaults"
        steps = [
            ["configuration", f"{templates}/global"],
            ["complexes", f"{resources}/centry"],
            ["usersets", f"{resources}/usersets"],
            ["managers", "sgeadmin", "root"],
            ["adminhosts", f"{templates}/adminhosts"],
            ["submithosts", f"{templates}/submithosts"],
            ["exechosts", f"{templates}/exechosts"],
            ["pes", f"{templates}/pes"],
        ]
        for step in steps:
            self._sge([defaults, *step], as_admin=True)

    def _ensure_sge(self) -> None:
        spool = self.paths.root / "var/spool/gridengine"
        if not (spool / "spooldb/sge").exists():
            self._init_sge_spool()
        started_master = "sge_qmaster" not in self.running()
        self._ensure("sge_qmaster", ["/usr/sbin/sge_qmaster"],
                     lambda: tcp_open(self.ip, SGE_QMASTER_PORT),
                     "var/spool/gridengine/qmaster/messages", env=SGE_ENV)
        self._ensure_sge_queues()
        if started_master:
            current = self._sge(["qconf", "-ssconf"])
            wanted = sge_sched_config(current)
            if wanted != current:
                conf = f"{SGE_TEMPLATES}/sched_configuration"
                (self.paths.root / conf).write_text(wanted)
                self._sge(["qconf", "-Msconf", f"/{conf}"])
        self._ensure("sge_execd", ["/usr/sbin/sge_execd"], self._sge_queues_ready,
                     f"var/spool/gridengine/execd/{self.site.name}/messages", env=SGE_ENV)

    def _ensure_sge_queues(self) -> None:
        """Add missing cluster queues through qmaster (spooled ones would lack instances)."""
        listed = nsexec(self.holder, ["qconf", "-sql"], env=SGE_ENV, check=False)
        have = set(listed.stdout.split()) if listed.returncode == 0 else set()
        for queue in self.site.queues:
            if queue.name not in have:
                self._sge(["qconf", "-Aq", f"/{SGE_TEMPLATES}/cqueues/{queue.name}"])

    def _sge_queues_ready(self) -> bool:
        """Every queue instance is known to qmaster with no alarm/unknown/disabled state."""
        proc = nsexec(self.holder, ["qstat", "-f"], env=SGE_ENV, check=False, timeout=15)
        seen = 0
        for line in proc.stdout.splitlines():
            fields = line.split()
            if not fields or "@" not in fields[0]:
                continue
            seen += 1
            # queuename qtype resv/used/tot. load_avg arch [states]
            if len(fields) > 5 or fields[3] == "-NA-":
                return False
        return seen >= len(self.site.queues)
