"""Where a testbed lives: its prefix (names), its subnet (addresses) and its state dir.

Two testbeds with different prefixes and subnets can run side by side on one machine
(two test runs, a developer's and CI's). Everything a testbed creates is named from
its prefix: network namespaces `<prefix>-<site>`, the bridge `<prefix>-br`, veth pairs
`<prefix>-v<N>`, the state dir `/run/gridgate-testbed/<prefix>`.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from rules.text import TextRule

DEFAULT_PREFIX = "gwtb"
DEFAULT_SUBNET = "10.123.0.0/24"
STATE_ROOT = Path("/run/gridgate-testbed")
PREFIX_ENV = "GRIDGATE_TESTBED_PREFIX"
SUBNET_ENV = "GRIDGATE_TESTBED_SUBNET"
TEMPLATES_ENV = "GRIDGATE_TESTBED_SITE_CONFIGS"
# Interface names are at most 15 bytes: "<prefix>-br" and "<prefix>-v<N>" must fit.
_PREFIX = TextRule("testbed prefix", r"[a-z][a-z0-9]{0,7}",
                   "use 1-8 lowercase letters or digits, starting with a letter")
# Site N gets host address FIRST_SITE_HOST + N; the bridge (root namespace) gets .1.
FIRST_SITE_HOST = 10
# Site N's WAN link is the /31 at WAN_FIRST_HOST + 2N (gateway end) and + 1 (site end).
WAN_FIRST_HOST = 128


class TestbedError(RuntimeError):
    """The testbed cannot do what was asked; the message says why and what to do."""

    __test__ = False  # not a pytest test class, despite its name


@dataclass(frozen=True)
class TestbedConfig:
    """The names and addresses of one testbed."""

    __test__ = False  # not a pytest test class, despite its name

    prefix: str
    subnet: ipaddress.IPv4Network
    state_root: Path = STATE_ROOT

    def __post_init__(self) -> None:
        if not _PREFIX.matches(self.prefix):
            raise TestbedError(
                f"invalid testbed prefix {self.prefix!r}: use 1-8 lowercase letters or "
                "digits, starting with a letter")
        if self.subnet.prefixlen > 27:
            raise TestbedError(f"subnet {self.subnet} is too small: use a /27 or larger")
        if not self.subnet.is_private:
            raise TestbedError(f"subnet {self.subnet} is not a private range")

    @classmethod
    def from_env(cls, prefix: str | None = None, subnet: str | None = None) -> TestbedConfig:
        """Explicit values first, then GRIDGATE_TESTBED_PREFIX/_SUBNET, then the defaults."""
        raw_prefix = prefix or os.environ.get(PREFIX_ENV) or DEFAULT_PREFIX
        raw_subnet = subnet or os.environ.get(SUBNET_ENV) or DEFAULT_SUBNET
        try:
            net = ipaddress.IPv4Network(raw_subnet, strict=False)
        except ValueError as exc:
            raise TestbedError(f"invalid testbed subnet {raw_subnet!r}: {exc}") from exc
        return cls(prefix=raw_prefix, subnet=net)

    @property
    def state_dir(self) -> Path:
        return self.state_root / self.prefix

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    @property
    def bridge_ip(self) -> ipaddress.IPv4Address:
        return self.subnet.network_address + 1

    def netns(self, site: str) -> str:
        return f"{self.prefix}-{site}"

    def veth(self, index: int) -> str:
        """The root-namespace end of site `index`'s veth pair (the other end is eth0)."""
        return f"{self.prefix}-v{index}"

    def veth_peer(self, index: int) -> str:
        """The temporary name of the site end before it moves into the namespace."""
        return f"{self.prefix}-p{index}"

    def site_ip(self, index: int) -> ipaddress.IPv4Address:
        return self.subnet.network_address + FIRST_SITE_HOST + index

    @property
    def has_wan(self) -> bool:
        """Whether the subnet has room for the sites' WAN links (a /24 or larger)."""
        return self.subnet.prefixlen <= 24

    def wan_veth(self, index: int) -> str:
        """The root-namespace end of site `index`'s WAN veth pair (the other end is wan0)."""
        return f"{self.prefix}-w{index}"

    def wan_veth_peer(self, index: int) -> str:
        return f"{self.prefix}-x{index}"

    def wan_ips(self, index: int) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]:
        """The two ends of site `index`'s WAN link, a /31 in the subnet's upper half: the
        root namespace's (where the link's proxy listens) and the site's (wan0)."""
        if not self.has_wan:
            raise TestbedError(f"subnet {self.subnet} has no room for WAN links: use a /24 "
                               "or larger")
        root = self.subnet.network_address + WAN_FIRST_HOST + 2 * index
        return root, root + 1
