"""The live testbed for tests: a session fixture, and helpers to reach the sites.

Register once in tests/conftest.py: `pytest_plugins = ["tests.testbed.fixture"]`.
Then any test can take `testbed` (a `testbed.state.TestbedInfo`):

    def test_something(testbed: TestbedInfo) -> None:
        site = testbed.sites["roadrunner"]
        # site.ip, site.ssh_port, site.host_key, site.known_hosts,
        # site.key("gwcomm"), site.site_config, testbed.site_configs (a directory)
        result = ssh(site, "gwcomm", ["sbatch", "--parsable", "--wrap", "hostname"])

The testbed comes up once per session (packages are installed first if missing, which
needs root) and goes down at the end. Prefix and subnet: GRIDGATE_TESTBED_PREFIX /
GRIDGATE_TESTBED_SUBNET if set (a testbed already healthy under that prefix is reused
and left running), else a fresh random prefix and a free random 10.x.y.0/24, so test
runs that overlap (a developer's and CI's) never collide.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import secrets
import shlex
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from testbed import manager, network
from testbed.config import PREFIX_ENV, SUBNET_ENV, TestbedConfig, TestbedError
from testbed.install import install, install_toxiproxy
from testbed.state import SiteInfo, TestbedInfo

SSH_TIMEOUT = 120.0


def unique_config() -> TestbedConfig:
    """A fresh prefix and a random /24 in 10.200.0.0-10.250.255.0 that this machine lacks."""
    prefix = "t" + secrets.token_hex(3)
    for _ in range(50):
        net = ipaddress.IPv4Network(
            f"10.{200 + secrets.randbelow(51)}.{secrets.randbelow(256)}.0/24")
        config = TestbedConfig(prefix=prefix, subnet=net)
        try:
            network.check_subnet_free(config)
        except TestbedError:
            continue
        return config
    raise TestbedError("no free 10.x.y.0/24 subnet found for a test testbed")


def session_config() -> TestbedConfig:
    """The env's prefix/subnet when given, else `unique_config()`."""
    if os.environ.get(PREFIX_ENV) or os.environ.get(SUBNET_ENV):
        return TestbedConfig.from_env()
    return unique_config()


OWNER_FILE = "owner"


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def mark_owner(config: TestbedConfig) -> None:
    """Record this process as the testbed's owner (see `reap_abandoned`)."""
    config.state_dir.mkdir(parents=True, exist_ok=True)
    (config.state_dir / OWNER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")


def reap_abandoned() -> list[str]:
    """Take down test testbeds whose owning test process is gone (killed before teardown).

    Only testbeds with an owner file (made by this module) are touched; a testbed
    started with `gridgate testbed up` has none and is never reaped.
    """
    reaped = []
    root = TestbedConfig.from_env().state_root
    for owner in sorted(root.glob(f"*/{OWNER_FILE}")) if root.is_dir() else []:
        try:
            pid_text, start = owner.read_text().split()
            pid = int(pid_text)
        except (OSError, ValueError):
            continue
        if _start_time(pid) == start:
            continue  # its owner is still running
        config = dataclasses.replace(TestbedConfig.from_env(), prefix=owner.parent.name)
        manager.down(config)
        reaped.append(config.prefix)
    return reaped


@contextlib.contextmanager
def running_testbed(config: TestbedConfig) -> Iterator[TestbedInfo]:
    """Bring the testbed up (unless it already is) and down again afterwards if we did."""
    install()
    install_toxiproxy()
    reap_abandoned()
    reused = False
    with contextlib.suppress(TestbedError):
        reused = manager.status(config).healthy
    if not reused:
        mark_owner(config)
    try:
        yield manager.up(config)
    finally:
        if not reused:
            manager.down(config)


@pytest.fixture(scope="session")
def testbed() -> Iterator[TestbedInfo]:
    """The three-site testbed, up for the whole session."""
    with running_testbed(session_config()) as info:
        yield info


# --- reaching the sites with the OpenSSH client ----------------------------------------

def ssh_argv(site: SiteInfo, account: str, remote: Sequence[str] | str,
             known_hosts: str | None = None) -> list[str]:
    """OpenSSH argv that logs into `site` as `account`, the host key pinned.

    `remote` is an argv (quoted for the remote shell) or a shell command line.
    """
    command = remote if isinstance(remote, str) else shlex.join(remote)
    return [
        "ssh", "-F", "none",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known_hosts or site.known_hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=15",
        "-o", "LogLevel=ERROR",
        "-i", site.key(account), "-p", str(site.ssh_port),
        f"{account}@{site.ip}", "--", command,
    ]


def ssh(site: SiteInfo, account: str, remote: Sequence[str] | str, *,
        input_text: str | None = None, check: bool = True,
        known_hosts: str | None = None,
        timeout: float = SSH_TIMEOUT) -> subprocess.CompletedProcess[str]:
    """Run a command at `site` as `account` over OpenSSH; raise on failure if `check`."""
    proc = subprocess.run(ssh_argv(site, account, remote, known_hosts), input=input_text,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"ssh {account}@{site.name} {remote!r} -> rc {proc.returncode}\n"
                             f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


FINAL_SLURM = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
               "PREEMPTED", "BOOT_FAIL", "DEADLINE")


def wait_slurm_job(site: SiteInfo, account: str, job_id: str,
                   timeout: float = 120.0) -> dict[str, str]:
    """Poll `sacct -P` until the job's allocation is final; {field: value} of that line."""
    fields = ("JobID", "State", "ExitCode", "NodeList", "User")
    deadline = time.monotonic() + timeout
    while True:
        out = ssh(site, account, ["sacct", "-n", "-X", "-P", "-j", job_id,
                                  "-o", ",".join(fields)]).stdout
        for line in out.splitlines():
            row = dict(zip(fields, line.split("|"), strict=False))
            if row.get("JobID") == job_id and row.get("State", "").split()[0] in FINAL_SLURM:
                return row
        if time.monotonic() > deadline:
            raise AssertionError(f"{site.name}: job {job_id} not final in sacct after "
                                 f"{timeout:.0f}s: {out!r}")
        time.sleep(0.5)


def wait_sge_job(site: SiteInfo, account: str, job_id: str,
                 timeout: float = 120.0) -> dict[str, str]:
    """Poll `qacct -j` until the job has an accounting record; {key: value} of it."""
    deadline = time.monotonic() + timeout
    while True:
        proc = ssh(site, account, ["qacct", "-j", job_id], check=False)
        if proc.returncode == 0:
            record: dict[str, str] = {}
            for line in proc.stdout.splitlines():
                key, _, value = line.partition(" ")
                if key and not key.startswith("="):
                    record[key] = value.strip()
            return record
        if time.monotonic() > deadline:
            raise AssertionError(f"{site.name}: job {job_id} has no qacct record after "
                                 f"{timeout:.0f}s: {proc.stderr!r}")
        time.sleep(0.5)


def holder_alive(pid: int) -> bool:
    """Whether a holder pid is still a live process."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
