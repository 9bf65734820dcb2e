"""The testbed's network: one bridge in the root namespace, one namespace + veth per site.

Sites have no default route: they reach each other and the root namespace over the
bridge, and nothing else.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import subprocess
from pathlib import Path
from typing import Any

from testbed.config import TestbedConfig, TestbedError
from testbed.sites import SiteId

NETNS_DIR = Path("/run/netns")


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`; on failure raise TestbedError with ip's message."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise TestbedError(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def _ip_json(*args: str) -> list[dict[str, Any]]:
    out = ip("-j", *args).stdout.strip()
    data = json.loads(out) if out else []
    return data if isinstance(data, list) else []


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def delete_link(name: str) -> None:
    """Delete a link; one that is gone by then is not an error.

    A veth goes with its peer, and the peer with its namespace once the last process in
    it ends; the kernel destroys a dead namespace's devices asynchronously, so a link seen
    a moment ago can vanish before `ip link del` reaches it (seen in CI at testbed
    teardown, right after the sites' holders were killed: "Cannot find device").
    """
    proc = ip("link", "del", name, check=False)
    if proc.returncode != 0 and link_exists(name):
        raise TestbedError(f"ip link del {name}: {proc.stderr.strip() or proc.returncode}")


def netns_exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def netns_path(name: str) -> Path:
    return NETNS_DIR / name


def check_subnet_free(config: TestbedConfig) -> None:
    """Refuse a subnet that overlaps any address or route this machine already has."""
    for link in _ip_json("-4", "addr", "show"):
        if link.get("ifname") == config.bridge or str(link.get("ifname", "")).startswith(
                f"{config.prefix}-"):
            continue
        for info in link.get("addr_info", []):
            net = ipaddress.IPv4Network(f"{info['local']}/{info['prefixlen']}", strict=False)
            if net.overlaps(config.subnet):
                raise TestbedError(
                    f"subnet {config.subnet} overlaps {net} on {link.get('ifname')}: choose "
                    "another with --subnet or GRIDGATE_TESTBED_SUBNET")
    for route in _ip_json("-4", "route", "show", "table", "all"):
        dst = route.get("dst", "default")
        if dst == "default" or str(route.get("dev", "")).startswith(f"{config.prefix}-") \
                or route.get("type") in (
                "local", "broadcast"):
            continue
        net = ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False)
        if net.overlaps(config.subnet):
            raise TestbedError(
                f"subnet {config.subnet} overlaps the route {dst} (dev {route.get('dev')}): "
                "choose another with --subnet or GRIDGATE_TESTBED_SUBNET")


def bridge_subnet(config: TestbedConfig) -> ipaddress.IPv4Interface | None:
    """The address on this testbed's bridge, or None when the bridge does not exist."""
    if not link_exists(config.bridge):
        return None
    for link in _ip_json("-4", "addr", "show", "dev", config.bridge):
        for info in link.get("addr_info", []):
            return ipaddress.IPv4Interface(f"{info['local']}/{info['prefixlen']}")
    return None


def ensure_bridge(config: TestbedConfig) -> None:
    """Create the bridge with the subnet's first address, or check the existing one."""
    want = ipaddress.IPv4Interface(f"{config.bridge_ip}/{config.subnet.prefixlen}")
    if link_exists(config.bridge):
        have = bridge_subnet(config)
        if have != want:
            raise TestbedError(
                f"bridge {config.bridge} exists with address {have}, not {want}: a testbed "
                f"with prefix {config.prefix!r} is up on another subnet; run "
                "`gridgate testbed down` first or pick another prefix")
        ip("link", "set", config.bridge, "up")
        return
    check_subnet_free(config)
    ip("link", "add", config.bridge, "type", "bridge")
    ip("addr", "add", str(want), "dev", config.bridge)
    ip("link", "set", config.bridge, "up")


def remove_bridge(config: TestbedConfig) -> None:
    if link_exists(config.bridge):
        ip("link", "del", config.bridge)


def site_net_problem(config: TestbedConfig, site: SiteId) -> str | None:
    """What is wrong with the site's network (namespace, eth0 with its address on the
    bridge's veth, WAN link), or None when nothing is."""
    ns, veth = config.netns(site.name), config.veth(site.index)
    if not netns_exists(ns):
        return f"namespace {ns} is missing"
    if not link_exists(veth):
        return f"link {veth} is missing"
    proc = ip("-n", ns, "-j", "-4", "addr", "show", "dev", "eth0", check=False)
    if proc.returncode != 0:
        return f"`ip -n {ns} addr show dev eth0` failed: {proc.stderr.strip() or proc.returncode}"
    want = str(config.site_ip(site.index))
    have = [info.get("local") for link in json.loads(proc.stdout or "[]")
            for info in link.get("addr_info", [])]
    if want not in have:
        return f"eth0 in {ns} has {have or 'no address'}, not {want}"
    if config.has_wan and not link_exists(config.wan_veth(site.index)):
        return f"WAN link {config.wan_veth(site.index)} is missing"
    return None


def create_site_net(config: TestbedConfig, site: SiteId) -> None:
    """A fresh namespace with eth0 (the site's address) plugged into the bridge."""
    remove_site_net(config, site)
    ns, veth, peer = config.netns(site.name), config.veth(site.index), config.veth_peer(site.index)
    addr = f"{config.site_ip(site.index)}/{config.subnet.prefixlen}"
    ip("netns", "add", ns)
    ip("link", "add", veth, "type", "veth", "peer", "name", peer)
    ip("link", "set", peer, "netns", ns)
    ip("-n", ns, "link", "set", peer, "name", "eth0")
    ip("-n", ns, "addr", "add", addr, "dev", "eth0")
    ip("-n", ns, "link", "set", "eth0", "up")
    ip("-n", ns, "link", "set", "lo", "up")
    ip("link", "set", veth, "master", config.bridge, "up")


def create_wan_net(config: TestbedConfig, site: SiteId, rate_mbit: float) -> None:
    """The site's WAN veth pair: wan0 in its namespace and the gateway end in the root
    namespace, a /31 of their own, each end's egress shaped to `rate_mbit` by a token
    bucket. Only the link's proxy talks across it, so every connection over the link
    shares that rate, as on a real link; the site's LAN address stays unshaped."""
    if not config.has_wan:
        return
    ns, veth, peer = config.netns(site.name), config.wan_veth(site.index), \
        config.wan_veth_peer(site.index)
    here, there = config.wan_ips(site.index)
    for name in (veth, peer):
        if link_exists(name):
            delete_link(name)
    ip("link", "add", veth, "type", "veth", "peer", "name", peer)
    ip("link", "set", peer, "netns", ns)
    ip("-n", ns, "link", "set", peer, "name", "wan0")
    ip("-n", ns, "addr", "add", f"{there}/31", "dev", "wan0")
    ip("-n", ns, "link", "set", "wan0", "up")
    ip("addr", "add", f"{here}/31", "dev", veth)
    ip("link", "set", veth, "up")
    shape_wan(config, site, rate_mbit)


def shape_wan(config: TestbedConfig, site: SiteId, rate_mbit: float) -> None:
    """Both ends of the site's WAN veth pair send at most `rate_mbit` (set or changed)."""
    shape = token_bucket(rate_mbit)
    tc(None, "qdisc", "replace", "dev", config.wan_veth(site.index), "root", *shape)
    tc(config.netns(site.name), "qdisc", "replace", "dev", "wan0", "root", *shape)


def token_bucket(rate_mbit: float) -> list[str]:
    """tbf's arguments for `rate_mbit`: a bucket of 10 ms of traffic, and at least 256 KiB
    (more than a timer tick's worth at any rate, so the rate holds, and more than the
    largest segment a veth passes whole, 64 KiB with GSO, which a smaller bucket would
    drop forever), and a queue of 50 ms."""
    bucket = max(256 * 1024, int(rate_mbit * 1e6 / 8 / 100))
    return ["tbf", "rate", f"{rate_mbit:g}mbit", "burst", str(bucket), "latency", "50ms"]


def tc(ns: str | None, *args: str) -> None:
    """Run `tc ARGS` (in namespace `ns`); on failure raise TestbedError with its message."""
    argv = ["tc", *args] if ns is None else ["tc", "-n", ns, *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise TestbedError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.returncode}")


def remove_site_net(config: TestbedConfig, site: SiteId) -> None:
    """Delete the site's veth pairs and namespace (each only if present)."""
    for name in (config.veth(site.index), config.veth_peer(site.index),
                 config.wan_veth(site.index), config.wan_veth_peer(site.index)):
        if link_exists(name):
            delete_link(name)
    ns = config.netns(site.name)
    if netns_exists(ns):
        ip("netns", "del", ns)


def release_netns_dir() -> None:
    """Unmount and remove /run/netns once no namespace is left in it.

    `ip netns add` bind-mounts /run/netns on itself the first time; with the last
    namespace gone, this leaves the machine as it was (iproute2 remakes it when needed).
    """
    if not NETNS_DIR.is_dir() or any(NETNS_DIR.iterdir()):
        return
    mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    if any(line.split()[4] == str(NETNS_DIR) for line in mountinfo if line.strip()):
        subprocess.run(["umount", str(NETNS_DIR)], check=False, capture_output=True)
    with contextlib.suppress(OSError):
        NETNS_DIR.rmdir()


def testbed_links(config: TestbedConfig) -> list[str]:
    """Every interface in the root namespace named with this testbed's prefix."""
    root = Path("/sys/class/net")
    return sorted(p.name for p in root.iterdir() if p.name.startswith(f"{config.prefix}-"))


def testbed_netns(config: TestbedConfig) -> list[str]:
    """Every named network namespace with this testbed's prefix."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(f"{config.prefix}-"))
