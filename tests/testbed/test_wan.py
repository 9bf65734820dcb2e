"""The testbed's WAN links, live: each site answers at the gateway end of its link with its
own host key, the link delays every round trip by its RTT and holds a transfer to its
rate, and the site's LAN address is left as it was. Both are checked as lower bounds on
elapsed time, which a slow or loaded machine can only make larger: an emulator that does
not delay or shape fails them, a noisy machine never does."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pytest

from adapters.errors import CommandTimeout, ConnectionFailed, HostKeyMismatch
from adapters.ssh import SshTarget, SshTransport
from testbed import login_hosts, wan
from testbed.config import TestbedConfig
from testbed.network import token_bucket
from testbed.sites import SITE_NAMES
from testbed.state import SiteInfo, TestbedInfo
from testbed.wan import LINKS
from tests.testbed.fixture import ssh

pytestmark = pytest.mark.uses_testbed
ACCOUNT = "gwcomm"
SENT = 12 * 1024 * 1024


def over_wan(site: SiteInfo, tmp_path: Path) -> tuple[SiteInfo, str]:
    """The site as reached over its WAN link, and a known_hosts pinning its key there."""
    assert site.wan_ip is not None
    known = tmp_path / f"known_hosts-{site.name}"
    known.write_text(f"{site.wan_ip} {site.host_key}\n")
    return dataclasses.replace(site, ip=site.wan_ip), str(known)


@pytest.mark.parametrize("name", SITE_NAMES)
def test_a_round_trip_over_the_link_takes_its_rtt(testbed: TestbedInfo, name: str) -> None:
    site = testbed.sites[name]
    assert (site.wan_rtt_ms, site.wan_rate_mbit) == (LINKS[name].rtt_ms,
                                                      LINKS[name].rate_mbit)
    transport = SshTransport(SshTarget(host=site.wan_ip or "", port=site.ssh_port,
                                       user=ACCOUNT, host_keys=(site.host_key,),
                                       key_path=site.key(ACCOUNT), site=name))
    try:
        assert transport.run(["hostname"]).stdout.decode().strip() == name  # connects, key pinned
        for _ in range(3):
            started = time.monotonic()
            transport.run(["true"])  # a pooled connection: the command's round trips only
            assert time.monotonic() - started >= site.wan_rtt_ms / 1000
    finally:
        transport.close()


@pytest.mark.parametrize("name", SITE_NAMES)
def test_a_transfer_over_the_link_is_held_to_its_rate(testbed: TestbedInfo, name: str,
                                                      tmp_path: Path) -> None:
    site = testbed.sites[name]
    wan, known = over_wan(site, tmp_path)
    started = time.monotonic()
    got = ssh(wan, ACCOUNT, "wc -c", input_text="x" * SENT, known_hosts=known)
    elapsed = time.monotonic() - started
    assert int(got.stdout) == SENT
    rate = (site.wan_rate_mbit or 0) * 1e6 / 8
    bucket = int(token_bucket(site.wan_rate_mbit or 0)[4])  # sent at once, unshaped
    assert elapsed >= (SENT - bucket) / rate


def test_only_the_link_is_shaped(testbed: TestbedInfo) -> None:
    # The LAN path (the site's bridge port) has no token bucket; the WAN veth has one.
    config = TestbedConfig.from_env(prefix=testbed.prefix, subnet=testbed.subnet)
    for index, name in enumerate(SITE_NAMES):
        lan = subprocess.run(["tc", "qdisc", "show", "dev", config.veth(index)],
                             capture_output=True, text=True, check=True).stdout
        link = subprocess.run(["tc", "qdisc", "show", "dev", config.wan_veth(index)],
                              capture_output=True, text=True, check=True).stdout
        assert "tbf" not in lan and "tbf" in link, (name, lan, link)
        assert testbed.sites[name].ip != testbed.sites[name].wan_ip


def test_wan_addresses_fit_beside_the_sites() -> None:
    config = TestbedConfig.from_env(prefix="tbx", subnet="10.9.8.0/24")
    assert [str(a) for a in config.wan_ips(2)] == ["10.9.8.132", "10.9.8.133"]
    assert not TestbedConfig.from_env(prefix="tbx", subnet="10.9.8.0/26").has_wan


def test_extra_login_hosts_each_answer_with_their_own_key_over_their_link(
        testbed: TestbedInfo) -> None:
    """testbed.login_hosts: two more login hosts in front of roadrunner, each its own
    sshd, host key and link; a cut link refuses at once, a black hole answers nothing."""
    config = TestbedConfig.from_env(prefix=testbed.prefix, subnet=testbed.subnet)
    site = testbed.sites["roadrunner"]
    hosts = login_hosts.start(config, site, [10, 60], prefix="t")
    transports = [SshTransport(SshTarget(host=h.host, port=h.port, user=ACCOUNT,
                                         host_keys=(h.host_key,), key_path=site.key(ACCOUNT),
                                         site=h.name, connect_timeout=10))
                  for h in hosts]
    try:
        assert len({h.host_key for h in hosts} | {site.host_key}) == 3
        for host, transport in zip(hosts, transports, strict=True):
            assert transport.run(["hostname"]).stdout.decode().strip() == "roadrunner"
            started = time.monotonic()
            transport.run(["true"])
            assert time.monotonic() - started >= host.rtt_ms / 1000
        # Another host's key is refused: each login host shows its own.
        swapped = SshTarget(host=hosts[0].host, port=hosts[0].port, user=ACCOUNT,
                            host_keys=(hosts[1].host_key,), key_path=site.key(ACCOUNT),
                            site="swapped")
        with pytest.raises(HostKeyMismatch):
            SshTransport(swapped).run(["true"])

        wan.black_hole(config, hosts[0].link)
        try:
            with pytest.raises(CommandTimeout):
                transports[0].run(["true"], timeout=2)
        finally:
            wan.black_hole(config, hosts[0].link, on=False)
        wan.cut(config, hosts[1].link)
        try:
            transports[1].disconnect()
            with pytest.raises(ConnectionFailed, match="cannot connect"):
                transports[1].run(["true"])
        finally:
            wan.cut(config, hosts[1].link, on=False)
    finally:
        for transport in transports:
            transport.close()
        login_hosts.stop(config, site, hosts)
