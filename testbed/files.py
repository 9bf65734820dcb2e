"""A site's private tree on the host, its keys, and the state dir's layout.

State dir (`/run/gridgate-testbed/<prefix>`, mode 0755; keys/ 0700, private keys 0600):

    testbed.json                 summary: prefix, subnet, bridge, and per site its facts
    known_hosts                  the three pinned host keys ("<ip> ssh-ed25519 AAAA...")
    site-configs/<site>.yaml     the completed site configs (GRIDGATE_SITE_CONFIGS_DIR)
    owner                        (test fixture only) pid + start time of the owning run
    sites/<site>/
        site.json                this site's part of testbed.json (state.SiteInfo)
        known_hosts              this site's host key line
        host_key.pub             sshd's public host key
        keys/<account>[.pub]     the accounts' ed25519 keys (private: 0600)
        holder.sh, holder.pid    the holder's script and pid
        logs/                    holder and daemon stdout/stderr (as seen from the host)
        root/                    the site's private files, bind-mounted at /<same path>
                                 inside the site (etc, var/lib/mysql, home, ...)

A site's /etc is a private copy of the host's (root/etc, bound as a directory) with the
site's own accounts, hosts, sshd and scheduler files written into it. Binding single files
over /etc/passwd and friends does not last: the host's useradd replaces /etc/passwd by a
rename, and a rename over a file that is a mount point in another mount namespace detaches
that mount (Linux >= 3.18), so the site silently fell back to the host's accounts and
refused every test account's login.

Keys are kept across `up` calls (a running site keeps its host key) and deleted by `down`.
"""

from __future__ import annotations

import base64
import grp
import hashlib
import ipaddress
import os
import pwd
import shutil
import subprocess
from pathlib import Path

from testbed import render
from testbed.config import TestbedConfig, TestbedError
from testbed.sites import ACCOUNTS, RESEARCHERS, SiteId, SiteSpec

SGE_TEMPLATES = "var/lib/gridengine/default/gridgate-templates"
SGE_DEFAULT_CONFIGURATION = Path("/usr/share/gridengine/default-configuration")


class SitePaths:
    """Where one site's files are, on the host."""

    def __init__(self, config: TestbedConfig, site: SiteId) -> None:
        self.dir = config.state_dir / "sites" / site.name
        self.root = self.dir / "root"
        self.keys = self.dir / "keys"
        self.logs = self.dir / "logs"
        self.holder_script = self.dir / "holder.sh"
        self.holder_pid = self.dir / "holder.pid"
        self.host_key = self.root / "etc/ssh/ssh_host_ed25519_key"
        self.host_key_pub = self.dir / "host_key.pub"
        self.known_hosts = self.dir / "known_hosts"
        self.facts = self.dir / "site.json"  # written by state.write

    def key(self, account: str) -> Path:
        return self.keys / account

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


def _ids(user: str) -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError as exc:
        raise TestbedError(
            f"system user {user!r} is missing: install the testbed packages "
            "(python3 -m testbed.install)") from exc
    return entry.pw_uid, entry.pw_gid


def _mkdir(path: Path, mode: int, owner: tuple[int, int] = (0, 0)) -> None:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, *owner)
    path.chmod(mode)


def _write(path: Path, text: str | bytes, mode: int = 0o644,
           owner: tuple[int, int] = (0, 0)) -> None:
    """Write only when the content differs (a running daemon sees no churn)."""
    data = text.encode() if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    os.chown(path, *owner)
    path.chmod(mode)


def keygen(path: Path, comment: str) -> None:
    """An ed25519 keypair at `path` (+ .pub), unless one is already there."""
    if path.exists() and path.with_name(path.name + ".pub").exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".pub").unlink(missing_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                    "-f", str(path)], check=True, stdin=subprocess.DEVNULL)
    path.chmod(0o600)


def fingerprint(public_key_line: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line ("ssh-ed25519 AAAA... [comment]")."""
    blob = base64.b64decode(public_key_line.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"


def host_key_line(paths: SitePaths) -> str:
    """The site's host public key as "ssh-ed25519 AAAA..." (no comment)."""
    fields = paths.host_key_pub.read_text().split()
    return f"{fields[0]} {fields[1]}"


# Files and directories of the site's /etc that the testbed writes itself (never copied
# from the host; a Grid Engine site keeps the host's slurm and munge directories).
SITE_ETC = ("hosts", "passwd", "group", "shadow", "ssh")
SLURM_ETC = ("slurm", "munge")


def _same(src: os.stat_result, dst: Path) -> bool:
    try:
        have = dst.lstat()
    except FileNotFoundError:
        return False
    return (have.st_mode, have.st_size, have.st_mtime_ns) == (
        src.st_mode, src.st_size, src.st_mtime_ns)


def copy_host_etc(dest: Path, skip: frozenset[str], source: Path = Path("/etc")) -> None:
    """Make `dest` a copy of the host's /etc, but for the top-level names in `skip`.

    Only entries that differ (mode, size, mtime) are written, each by an atomic rename, so
    a running site sees either the old file or the new one and an unchanged host costs no
    writes. Sockets and fifos are left out; owners and modes are kept.
    """
    _mkdir(dest, 0o755)
    for top, dirs, files in os.walk(source):
        rel = Path(top).relative_to(source)
        if rel == Path("."):
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in dirs:
            info = os.lstat(Path(top, name))
            target = dest / rel / name
            if Path(top, name).is_symlink():
                files.append(name)  # a link to a directory is copied as the link
            elif not target.is_dir() or target.is_symlink():
                if target.is_symlink() or target.exists():
                    target.unlink()
                target.mkdir()
                os.chown(target, info.st_uid, info.st_gid)
                target.chmod(info.st_mode & 0o7777)
        for name in files:
            src = Path(top, name)
            info = src.lstat()
            target = dest / rel / name
            if _same(info, target):
                continue
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            tmp = target.with_name(f".{name}.gridgate-tmp")
            tmp.unlink(missing_ok=True)
            if src.is_symlink():
                tmp.symlink_to(os.readlink(src))
            elif src.is_file():
                shutil.copy2(src, tmp)
            else:
                continue
            os.chown(tmp, info.st_uid, info.st_gid, follow_symlinks=False)
            if not src.is_symlink():
                tmp.chmod(info.st_mode & 0o7777)
            os.utime(tmp, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
            tmp.replace(target)


def prepare_site(config: TestbedConfig, site: SiteSpec) -> SitePaths:
    """Create or refresh the site's private tree, keys and configuration files."""
    paths = SitePaths(config, site)
    ip = config.site_ip(site.index)
    # 0755: daemons (mysql, munge, sgeadmin) reach their files through it; secrets below
    # have their own modes (keys/ 0700, private keys 0600, munge.key 0400).
    _mkdir(config.state_dir, 0o755)
    for d in (paths.dir, paths.keys, paths.logs, paths.root):
        _mkdir(d, 0o700 if d == paths.keys else 0o755)
    root = paths.root

    # Identity: hosts, users, ssh, in the site's own copy of /etc.
    copy_host_etc(root / "etc", frozenset(SITE_ETC + (SLURM_ETC if site.kind == "slurm" else ())))
    _write(root / "etc/hosts", render.hosts(site, ip))
    _write(root / "etc/passwd", render.passwd(Path("/etc/passwd").read_text()))
    _write(root / "etc/group", render.group(Path("/etc/group").read_text()))
    shadow_gid = _group_id("shadow")
    _write(root / "etc/shadow", render.shadow(Path("/etc/shadow").read_text()), 0o640,
           (0, shadow_gid))
    _mkdir(root / "etc/ssh", 0o755)
    for name in ("moduli", "ssh_config"):
        if Path("/etc/ssh", name).exists() and not (root / "etc/ssh" / name).exists():
            shutil.copy2(Path("/etc/ssh", name), root / "etc/ssh" / name)
    wan_ip = config.wan_ips(site.index)[1] if config.has_wan else None
    _write(root / "etc/ssh/sshd_config", render.sshd_config(ip, wan_ip=wan_ip))
    if not (root / render.TRUSTED_CA.lstrip("/")).exists():
        _write(root / render.TRUSTED_CA.lstrip("/"), "")  # no CA until a test trusts one
    keygen(paths.host_key, f"root@{site.name}")
    shutil.copyfile(paths.host_key.with_name(paths.host_key.name + ".pub"), paths.host_key_pub)
    _write(paths.known_hosts, f"{ip} {host_key_line(paths)}\n")

    _mkdir(root / "home", 0o755)
    for account in ACCOUNTS:
        key = paths.key(account.name)
        keygen(key, f"{account.name}@{site.name} (gridgate testbed)")
        home = root / "home" / account.name
        owner = (account.uid, account.uid)
        _mkdir(home, 0o750, owner)
        _mkdir(home / ".ssh", 0o700, owner)
        _write(home / ".ssh/authorized_keys",
               key.with_name(key.name + ".pub").read_text(), 0o600, owner)
    for account in RESEARCHERS:
        _mkdir(root / "home" / account.name, 0o750, (account.uid, account.uid))

    for tmp in ("tmp", "var/tmp"):
        _mkdir(root / tmp, 0o1777)
    # The gateway makes one 0700 directory per job in it; sticky like /tmp.
    _mkdir(root / site.scratch_root.lstrip("/"), 0o1777)
    _mkdir(root / "var/log", 0o755)

    if site.kind == "slurm":
        _prepare_slurm(site, root, ip)
    else:
        _prepare_sge(site, root)
    return paths


def _group_id(name: str) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return 0


def _prepare_slurm(site: SiteSpec, root: Path, ip: ipaddress.IPv4Address) -> None:
    munge = _ids("munge")
    mysql = _ids("mysql")
    _mkdir(root / "etc/slurm", 0o755)
    _write(root / "etc/slurm/slurm.conf", render.slurm_conf(site, ip))
    _write(root / "etc/slurm/slurmdbd.conf", render.slurmdbd_conf(site), 0o600)
    _mkdir(root / "etc/munge", 0o700, munge)
    key = root / "etc/munge/munge.key"
    if not key.exists():
        _write(key, os.urandom(1024), 0o400, munge)
    _mkdir(root / "var/lib/munge", 0o711, munge)
    _mkdir(root / "var/log/munge", 0o700, munge)
    _mkdir(root / "var/lib/slurm", 0o755)
    _mkdir(root / "var/lib/slurm/slurmctld", 0o755)
    _mkdir(root / "var/lib/slurm/slurmd", 0o755)
    _mkdir(root / "var/log/slurm", 0o755)
    _mkdir(root / "var/log/mysql", 0o750, mysql)
    datadir = root / "var/lib/mysql"
    _mkdir(datadir, 0o755, mysql)
    marker = datadir / ".gridgate-initialized"
    if not marker.exists():
        # A failed earlier attempt may have left half a datadir: start from empty.
        for entry in datadir.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        # --tmpdir: bootstraps of two sites at once collide in a shared /tmp.
        proc = subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=mysql",
             f"--tmpdir={root / 'tmp'}", "--auth-root-authentication-method=socket",
             "--skip-test-db", "--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M"],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise TestbedError(f"{site.name}: mariadb-install-db failed: "
                               f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
        marker.touch()


def _prepare_sge(site: SiteSpec, root: Path) -> None:
    sge = _ids("sgeadmin")
    cell = root / "var/lib/gridengine/default"
    _mkdir(cell, 0o755, sge)
    _mkdir(cell / "common", 0o755, sge)
    _write(cell / "common/bootstrap", render.sge_bootstrap(), owner=sge)
    _write(cell / "common/act_qmaster", f"{site.name}\n", owner=sge)
    _write(cell / "common/settings.sh", render.sge_settings_sh(), owner=sge)
    _write(cell / "common/cluster_name", f"{site.name}\n", owner=sge)
    spool = root / "var/spool/gridengine"
    _mkdir(spool, 0o755)
    for d in ("qmaster", "qmaster/job_scripts", "spooldb", "execd"):
        _mkdir(spool / d, 0o755, sge)
    templates = root / SGE_TEMPLATES
    _mkdir(templates, 0o755, sge)
    _write(templates / "global", render.sge_global_config(
        SGE_DEFAULT_CONFIGURATION.read_text()), owner=sge)
    for kind in ("adminhosts", "submithosts"):
        _write(templates / kind / site.name, render.sge_host(site.name), owner=sge)
    _write(templates / "exechosts" / site.name, render.sge_exechost(site.name), owner=sge)
    if site.parallel_environment:
        _write(templates / "pes" / site.parallel_environment,
               render.sge_pe(site.parallel_environment, 999), owner=sge)
    for queue in site.queues:
        _write(templates / "cqueues" / queue.name, render.sge_queue(site, queue), owner=sge)
    for d in ("adminhosts", "submithosts", "exechosts", "pes", "cqueues"):
        if (templates / d).is_dir():
            _mkdir(templates / d, 0o755, sge)
