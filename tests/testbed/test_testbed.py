"""The testbed's whole life on its own prefix and subnet: up (twice), status, logins with
pinned host keys, batch jobs seen in accounting, 2-rank MPI jobs at every site, down.

This module runs its own testbed (not the session's `testbed` fixture) because its last
test takes the testbed down; the two coexist, which also shows prefixes and subnets
keep testbeds apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.host import testbed as testbed_cli
from gateway.siteconfig import load_site_configs
from testbed import faults, manager, network
from testbed.config import TestbedConfig
from testbed.files import SitePaths
from testbed.holder import find_holders
from testbed.install import install
from testbed.sites import SITE_NAMES, load_sites
from testbed.state import SiteInfo, TestbedInfo, load
from tests.testbed.fixture import (
    holder_alive,
    mark_owner,
    reap_abandoned,
    ssh,
    unique_config,
    wait_sge_job,
    wait_slurm_job,
)

pytestmark = pytest.mark.uses_testbed

HELLO_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size, token = 0;
    char host[64];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    if (rank == 0 && size > 1) {
        token = 42;
        MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    printf("hello rank %d of %d on %s token %d\n", rank, size, host, token);
    MPI_Finalize();
    return 0;
}
"""

SLURM_MPI_SCRIPT = """#!/bin/bash
echo "== srun --mpi=pmi2 mpich"
srun --mpi=pmi2 ./hello-mpich
echo "== mpirun openmpi"
mpirun.openmpi -n 2 ./hello-ompi
"""

SGE_MPI_SCRIPT = """#!/bin/bash
echo "== mpirun mpich"
mpirun.mpich -n $NSLOTS ./hello-mpich
echo "== mpirun openmpi"
mpirun.openmpi -n $NSLOTS ./hello-ompi
"""


@dataclass
class Lifecycle:
    config: TestbedConfig
    first: TestbedInfo


@pytest.fixture(scope="module")
def lifecycle() -> Iterator[Lifecycle]:
    install()
    reap_abandoned()
    config = unique_config()
    mark_owner(config)
    try:
        yield Lifecycle(config, manager.up(config))
    finally:
        manager.down(config)


def _site(lc: Lifecycle, name: str) -> SiteInfo:
    return lc.first.sites[name]


def _assert_holders_kept(lc: Lifecycle, holders: dict[str, int | None]) -> None:
    """Every site still has the holder the first `up` started; else the holders' logs
    (where `up` says why it started one) are the failure's message."""
    logs = [SitePaths(lc.config, site).log("holder") for site in load_sites()]
    assert holders == {name: site.holder_pid for name, site in lc.first.sites.items()}, \
        "\n".join(f"{log}:\n{log.read_text() if log.exists() else ''}" for log in logs)


def _holders(info: TestbedInfo) -> dict[str, int | None]:
    return {name: site.holder_pid for name, site in info.sites.items()}


def test_up_again_keeps_every_site(lifecycle: Lifecycle) -> None:
    second = manager.up(lifecycle.config)
    _assert_holders_kept(lifecycle, _holders(second))
    for name in SITE_NAMES:
        before, after = lifecycle.first.sites[name], second.sites[name]
        assert after.host_key == before.host_key
        assert after.ip == str(lifecycle.config.site_ip(SITE_NAMES.index(name)))
    assert load(lifecycle.config) == second


def test_state_dir_holds_keys_and_completed_site_configs(lifecycle: Lifecycle) -> None:
    info = lifecycle.first
    for site in info.sites.values():
        for account in site.accounts.values():
            key = Path(account.key)
            assert key.stat().st_mode & 0o777 == 0o600
            assert key.read_text().startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
            assert account.uid >= 1000
        assert Path(site.known_hosts).read_text() == f"{site.ip} {site.host_key}\n"
    configs = {c.name: c for c in load_site_configs(Path(info.site_configs))}
    assert sorted(configs) == sorted(SITE_NAMES)
    for name, config in configs.items():
        site = info.sites[name]
        assert config.is_complete
        assert config.ssh is not None and config.ssh.host == site.ip
        assert config.ssh.host_keys == [site.host_key]
        assert config.accounts is not None
        for account in [config.accounts.community, *config.accounts.mapped.values()]:
            if account is not None:
                assert account.key.path == site.key(account.user)


def test_status_reports_every_site_healthy(lifecycle: Lifecycle) -> None:
    st = manager.status(lifecycle.config)
    assert st.healthy, st.to_json()
    for site in st.sites:
        info = lifecycle.first.sites[site.name]
        assert site.holder_pid == info.holder_pid
        assert site.host_key_fingerprint == info.host_key_fingerprint
        assert all(site.daemons.values())
    # The CLI shows the same, as JSON.
    result = CliRunner().invoke(testbed_cli.testbed_app, [
        "status", "--json", "--prefix", lifecycle.config.prefix,
        "--subnet", str(lifecycle.config.subnet)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["healthy"] is True
    assert [s["name"] for s in data["sites"]] == list(SITE_NAMES)
    assert data["sites"][0]["daemons"] == {d: True for d in (
        "munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sshd")}


def test_commands_refuse_non_root_with_a_clear_message() -> None:
    # The child only looks like nobody to the check (os.geteuid): a real uid switch would
    # need `nobody` to enter the clone's directory for the imports typer and rich make
    # lazily, and a clone under /root or a 0700 mktemp dir refuses that.
    code = (
        "import os\n"
        "os.geteuid = lambda: 65534\n"
        "from gateway.cli.host.testbed import testbed_app\n"
        "testbed_app(prog_name='gridgate testbed')\n")
    proc = subprocess.run(
        [sys.executable, "-c", code, "status"],
        capture_output=True, text=True, cwd="/", check=False,
        env={**os.environ, "HOME": "/nonexistent"})
    assert proc.returncode == 1
    assert "needs root" in proc.stderr and "sudo gridgate testbed" in proc.stderr


@pytest.mark.parametrize("name", SITE_NAMES)
def test_login_is_pinned_and_accounts_are_distinct(lifecycle: Lifecycle, name: str) -> None:
    site = _site(lifecycle, name)
    out = ssh(site, "gwcomm", ["sh", "-c", "hostname; id -u"]).stdout.split()
    assert out == [name, "2001"]
    uids = {ssh(site, user, ["id", "-u"]).stdout.strip() for user in ("gwalice", "gwbob")}
    assert uids == {"2002", "2003"}
    # Another site's key pinned for this address: OpenSSH refuses to connect.
    other = lifecycle.first.sites[SITE_NAMES[(SITE_NAMES.index(name) + 1) % 3]]
    wrong = Path(lifecycle.config.state_dir) / f"wrong-{name}"
    wrong.write_text(f"{site.ip} {other.host_key}\n")
    refused = ssh(site, "gwcomm", ["true"], check=False, known_hosts=str(wrong))
    assert refused.returncode == 255
    assert "host key" in refused.stderr.lower()


def _replace_by_rename(path: Path) -> None:
    """Replace `path` with an identical copy by rename, as useradd and userdel do."""
    info = path.stat()
    tmp = path.with_name(f".{path.name}.gridgate-test")
    shutil.copy2(path, tmp)
    os.chown(tmp, info.st_uid, info.st_gid)
    tmp.replace(path)


def test_sites_keep_their_accounts_when_the_host_replaces_its_own(
        lifecycle: Lifecycle) -> None:
    # The first run on a machine adds the host user `gwtest` (tests/ssh/sshd.py) while the
    # session testbed runs. Sites that bound single files over /etc/passwd lost those
    # mounts to the rename and refused every test account ("Permission denied").
    for name in ("passwd", "group", "shadow"):
        _replace_by_rename(Path("/etc", name))
    for name in SITE_NAMES:
        site = _site(lifecycle, name)
        assert ssh(site, "gwcomm", ["id", "-un"]).stdout.strip() == "gwcomm"


@pytest.mark.parametrize("name", SITE_NAMES)
def test_batch_job_completes_in_accounting(lifecycle: Lifecycle, name: str) -> None:
    site = _site(lifecycle, name)
    workdir = f"{site.scratch_root}/{uuid.uuid4().hex}"
    ssh(site, "gwcomm", ["mkdir", "-m", "700", workdir])
    if site.kind == "slurm":
        job = ssh(site, "gwcomm", ["sbatch", "--parsable", "--chdir", workdir,
                                   "--wrap", "hostname"]).stdout.strip()
        row = wait_slurm_job(site, "gwcomm", job)
        assert (row["State"], row["ExitCode"], row["NodeList"]) == ("COMPLETED", "0:0", name)
        output = ssh(site, "gwcomm", ["cat", f"{workdir}/slurm-{job}.out"]).stdout
    else:
        job = ssh(site, "gwcomm", ["qsub", "-terse", "-b", "y", "-wd", workdir,
                                   "-o", f"{workdir}/out", "-j", "y", "hostname"]).stdout.strip()
        record = wait_sge_job(site, "gwcomm", job)
        assert (record["failed"], record["exit_status"], record["owner"]) == ("0", "0", "gwcomm")
        output = ssh(site, "gwcomm", ["cat", f"{workdir}/out"]).stdout
    assert output.strip() == name


@pytest.mark.parametrize("name", SITE_NAMES)
def test_two_rank_mpi_job_with_mpich_and_openmpi(lifecycle: Lifecycle, name: str) -> None:
    site = _site(lifecycle, name)
    workdir = f"{site.scratch_root}/{uuid.uuid4().hex}"
    ssh(site, "gwcomm", ["mkdir", "-m", "700", workdir])
    ssh(site, "gwcomm", ["sh", "-c", 'cat > "$1/hello.c"', "sh", workdir], input_text=HELLO_C)
    ssh(site, "gwcomm", ["sh", "-c", 'cd "$1" && mpicc.mpich -o hello-mpich hello.c '
                         '&& mpicc.openmpi -o hello-ompi hello.c', "sh", workdir])
    if site.kind == "slurm":
        ssh(site, "gwcomm", ["sh", "-c", 'cat > "$1/job.sh"', "sh", workdir],
            input_text=SLURM_MPI_SCRIPT)
        job = ssh(site, "gwcomm", ["sbatch", "--parsable", "-n", "2", "--chdir", workdir,
                                   "-o", "out", "job.sh"]).stdout.strip()
        row = wait_slurm_job(site, "gwcomm", job)
        assert (row["State"], row["ExitCode"]) == ("COMPLETED", "0:0")
    else:
        ssh(site, "gwcomm", ["sh", "-c", 'cat > "$1/job.sh"', "sh", workdir],
            input_text=SGE_MPI_SCRIPT)
        job = ssh(site, "gwcomm", ["qsub", "-terse", "-wd", workdir, "-pe", "mpi", "2",
                                   "-o", f"{workdir}/out", "-j", "y",
                                   f"{workdir}/job.sh"]).stdout.strip()
        record = wait_sge_job(site, "gwcomm", job)
        assert (record["failed"], record["exit_status"]) == ("0", "0")
        assert (record["granted_pe"], record["slots"]) == ("mpi", "2")
    output = ssh(site, "gwcomm", ["cat", f"{workdir}/out"]).stdout
    sections = re.split(r"^== .*$", output, flags=re.M)[1:]
    assert len(sections) == 2, output
    for section in sections:
        ranks = sorted(re.findall(rf"hello rank (\d) of 2 on {name} token 42", section))
        assert ranks == ["0", "1"], output


def test_stopped_sshd_is_started_again_by_up(lifecycle: Lifecycle) -> None:
    site = _site(lifecycle, "roadrunner")
    assert faults.stop_daemon(lifecycle.config, "roadrunner", "sshd")
    assert ssh(site, "gwcomm", ["true"], check=False).returncode == 255
    st = {s.name: s for s in manager.status(lifecycle.config).sites}["roadrunner"]
    assert not st.healthy and st.daemons["sshd"] is False and st.daemons["slurmctld"]
    info = manager.up(lifecycle.config)
    _assert_holders_kept(lifecycle, _holders(info))
    assert info.sites["roadrunner"].host_key == site.host_key
    assert ssh(site, "gwcomm", ["hostname"]).stdout.strip() == "roadrunner"


def test_rotated_host_key_is_refused_under_the_old_pin(lifecycle: Lifecycle,
                                                       tmp_path: Path) -> None:
    site = _site(lifecycle, "galaxy")
    old_pin = tmp_path / "known_hosts"
    old_pin.write_text(Path(site.known_hosts).read_text())
    info = faults.rotate_host_key(lifecycle.config, "galaxy")
    _assert_holders_kept(lifecycle, _holders(info))
    new = info.sites["galaxy"]
    assert new.host_key != site.host_key
    assert new.host_key_fingerprint != site.host_key_fingerprint
    refused = ssh(site, "gwcomm", ["true"], check=False, known_hosts=str(old_pin))
    assert refused.returncode == 255 and "host key" in refused.stderr.lower()
    assert ssh(new, "gwcomm", ["hostname"]).stdout.strip() == "galaxy"
    assert Path(new.site_config).read_text().count(new.host_key) == 1


def test_a_site_whose_address_is_gone_is_rebuilt_and_up_says_why(
        lifecycle: Lifecycle) -> None:
    config, old = lifecycle.config, _site(lifecycle, "parnass2")
    network.ip("-n", config.netns("parnass2"), "addr", "flush", "dev", "eth0")
    said: list[str] = []
    info = manager.up(config, progress=said.append)
    why = (f"eth0 in {config.netns('parnass2')} has no address, "
           f"not {config.site_ip(SITE_NAMES.index('parnass2'))}")
    assert f"parnass2: rebuilding: {why}" in said
    log = SitePaths(config, next(s for s in load_sites() if s.name == "parnass2")).log("holder")
    assert f"up: (re)starting the holder: {why}" in log.read_text()
    new = info.sites["parnass2"]
    assert new.holder_pid != old.holder_pid and new.host_key == old.host_key
    assert ssh(new, "gwcomm", ["hostname"]).stdout.strip() == "parnass2"
    lifecycle.first = info  # the holders `down` must find now


def test_down_leaves_nothing(lifecycle: Lifecycle) -> None:
    config = lifecycle.config
    holders = [s.holder_pid for s in lifecycle.first.sites.values()]
    _assert_holders_kept(lifecycle, {s.name: s.holder_pid for s in manager.status(config).sites})
    report = manager.down(config)
    assert sorted(report.holders_killed) == sorted(holders)
    assert not any(holder_alive(pid) for pid in holders)
    assert network.testbed_netns(config) == []
    assert network.testbed_links(config) == []
    assert not network.link_exists(config.bridge)
    assert not Path(config.state_dir).exists()
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(config.state_dir) not in mounts and f"/run/netns/{config.prefix}-" not in mounts
    for name in SITE_NAMES:
        script = Path(config.state_dir) / "sites" / name / "holder.sh"
        assert find_holders(script) == []
    assert not manager.status(config).anything_left
    # A second down finds nothing to do.
    again = manager.down(config)
    assert (again.holders_killed, again.netns_deleted, again.links_deleted) == ([], [], [])
