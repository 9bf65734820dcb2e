"""The testbed's pure parts: names, limits and generated config text."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

import pytest

from testbed import render
from testbed.config import TestbedConfig, TestbedError
from testbed.files import fingerprint, keygen
from testbed.sites import EVERY_ACCOUNT, load_sites


@pytest.mark.parametrize(("seconds", "slurm", "sge"), [
    (None, "UNLIMITED", "INFINITY"),
    (900, "0-00:15:00", "00:15:00"),
    (43200, "0-12:00:00", "12:00:00"),
    (7 * 86400, "7-00:00:00", "168:00:00"),
    (90061, "1-01:01:01", "25:01:01"),
])
def test_time_limits(seconds: int | None, slurm: str, sge: str) -> None:
    assert render.slurm_time(seconds) == slurm
    assert render.sge_time(seconds) == sge


@pytest.mark.parametrize(("prefix", "subnet", "problem"), [
    ("Gwtb", "10.1.0.0/24", "invalid testbed prefix"),
    ("toolongname", "10.1.0.0/24", "invalid testbed prefix"),
    ("gw-tb", "10.1.0.0/24", "invalid testbed prefix"),
    ("gwtb\n", "10.1.0.0/24", "invalid testbed prefix"),
    ("gwtb", "10.1.0.0/28", "too small"),
    ("gwtb", "8.8.8.0/24", "not a private range"),
    ("gwtb", "10.1.0.0/33", "invalid testbed subnet"),
])
def test_config_refuses_bad_names_and_subnets(prefix: str, subnet: str, problem: str) -> None:
    with pytest.raises(TestbedError, match=problem):
        TestbedConfig.from_env(prefix, subnet)


def test_names_and_addresses_fit_interfaces() -> None:
    config = TestbedConfig.from_env("abcdefgh", "10.77.3.0/24")
    assert config.bridge == "abcdefgh-br" and len(config.bridge) <= 15
    assert config.veth(2) == "abcdefgh-v2" and config.netns("galaxy") == "abcdefgh-galaxy"
    assert config.bridge_ip == ipaddress.IPv4Address("10.77.3.1")
    assert [str(config.site_ip(i)) for i in range(3)] == ["10.77.3.10", "10.77.3.11",
                                                         "10.77.3.12"]


def test_sites_follow_their_templates() -> None:
    sites = {s.name: s for s in load_sites()}
    assert [s.kind for s in sites.values()] == ["slurm", "sge", "slurm"]
    conf = render.slurm_conf(sites["parnass2"], ipaddress.IPv4Address("10.9.9.12"))
    assert "ClusterName=parnass2\n" in conf
    assert "SlurmctldHost=parnass2(10.9.9.12)\n" in conf
    assert "SchedulerParameters=batch_sched_delay=0\n" in conf
    for p in sites["parnass2"].template.partitions:
        line = next(ln for ln in conf.splitlines() if ln.startswith(f"PartitionName={p.name} "))
        assert f"MaxTime={render.slurm_time(p.max_walltime)}" in line
        assert "DefaultTime=" in line and f"MaxNodes={p.max_nodes}" in line
    galaxy = sites["galaxy"]
    queue = render.sge_queue(galaxy, galaxy.queues[0])
    assert f"pe_list               {galaxy.parallel_environment}\n" in queue
    assert f"slots                 {galaxy.cpus}\n" in queue
    assert "load_thresholds       NONE\n" in queue


def test_accounts_get_a_usable_password_field() -> None:
    shadow = render.shadow("root:*:19000:0:99999:7:::\ngwbob:!:1::::::\n")
    lines = shadow.splitlines()
    assert lines[0].startswith("root:")
    # `!` (locked) would refuse key logins with UsePAM no: every account gets `*`.
    assert [ln.split(":")[:2] for ln in lines[1:]] == [[a.name, "*"] for a in EVERY_ACCOUNT]
    passwd = render.passwd("root:x:0:0:root:/root:/bin/bash\n")
    assert all(int(ln.split(":")[2]) >= 1000 for ln in passwd.splitlines()[1:])


def test_sge_overrides_join_continuation_lines() -> None:
    current = ("algorithm                         default\n"
               "schedule_interval                 0:0:15\n"
               "params                            a=1,\\\n   b=2\n"
               "flush_submit_sec                  0\n")
    out = render.sge_sched_config(current)
    assert "schedule_interval                 0:0:1\n" in out
    assert "flush_submit_sec                  1\n" in out
    assert "params                            a=1,   b=2\n" in out
    glob = render.sge_global_config("# Version\nmin_uid 0\nreporting_params x\n")
    assert "min_uid                1000" in glob and "accounting_flush_time=00:00:00" in glob


def test_fingerprint_matches_openssh(tmp_path: Path) -> None:
    key = tmp_path / "k"
    keygen(key, "test")
    assert key.stat().st_mode & 0o777 == 0o600
    line = key.with_name("k.pub").read_text()
    shown = subprocess.run(["ssh-keygen", "-lf", str(key.with_name("k.pub"))],
                           capture_output=True, text=True, check=True).stdout.split()[1]
    assert fingerprint(line) == shown
