"""Wide-area links to the testbed's sites (issue 32). Every site is reachable twice: at its
LAN address (the bridge, no delay, as before) and at its WAN address, the gateway end of
a link with the round-trip time and rate of `LINKS`.

What the emulation models, and what it does not:
- Delay: Toxiproxy (github.com/Shopify/toxiproxy, built from the Go module proxy by
  `python3 -m testbed.install`) listens at the link's gateway end and holds the data of
  each direction for half the round trip before passing it on to the site's sshd. It is a
  TCP proxy: the delay sits above the kernel's TCP. The gateway's TCP connection ends at
  the proxy a loopback hop away, so TCP's own window and congestion control never feel
  the delay; everything above TCP does: SSH's handshake round trips, its channel
  windows, every command's round trip.
- Rate: a token bucket (`tc tbf`) on both ends of a veth pair only the link's proxy
  talks across, so all connections over one link share its rate, as on a real link.
- Loss: not modelled. This kernel has neither netem nor a classifier and action that
  drop at random, and a TCP proxy cannot drop packets (TCP would only turn a loss into
  a delay).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import network
from testbed.config import TestbedConfig, TestbedError
from testbed.install import TOXIPROXY_BIN
from testbed.sites import SiteId

TOXIPROXY_ENV = "GRIDGATE_TOXIPROXY"
SSH_PORT = 22


@dataclass(frozen=True)
class Link:
    """A wide-area link: round-trip time (ms) and rate (Mbit/s) each way."""

    rtt_ms: int
    rate_mbit: float


# The example federation: a near site, a continental one and an intercontinental one.
LINKS: dict[str, Link] = {
    "roadrunner": Link(rtt_ms=20, rate_mbit=1000),
    "galaxy": Link(rtt_ms=80, rate_mbit=200),
    "parnass2": Link(rtt_ms=150, rate_mbit=100),
}
DEFAULT_LINK = Link(rtt_ms=80, rate_mbit=200)


def link_of(site: str) -> Link:
    return LINKS.get(site, DEFAULT_LINK)


def toxiproxy_binary() -> Path:
    """$GRIDGATE_TOXIPROXY, else the testbed's install, else `toxiproxy-server` on PATH."""
    given = os.environ.get(TOXIPROXY_ENV)
    if given:
        return Path(given)
    if TOXIPROXY_BIN.exists():
        return TOXIPROXY_BIN
    found = shutil.which("toxiproxy-server")
    if found is None:
        raise TestbedError(f"toxiproxy-server not found: run `python3 -m testbed.install` "
                           f"(as root) or set {TOXIPROXY_ENV}")
    return Path(found)


def _state(config: TestbedConfig) -> Path:
    return config.state_dir / "toxiproxy.json"


def _api(port: int, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                     method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
        raw = response.read()
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode()  # /version answers in plain text


def _running(config: TestbedConfig) -> int | None:
    """The API port of this testbed's Toxiproxy, if it runs."""
    try:
        known = json.loads(_state(config).read_text())
        cmdline = Path(f"/proc/{known['pid']}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, KeyError):
        return None
    if str(known["port"]).encode() not in cmdline:
        return None  # the pid was reused
    return int(known["port"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# Toxiproxy outlives this process (until `down`); its Popen is kept so that Python does not
# warn, when this process ends, that a child it started still runs.
_STARTED: list[subprocess.Popen[bytes]] = []


def _start(config: TestbedConfig) -> int:
    port = _free_port()
    with open(config.state_dir / "toxiproxy.log", "ab") as log:  # the child keeps its own fd
        proc = subprocess.Popen([str(toxiproxy_binary()), "-host", "127.0.0.1", "-port",
                                 str(port)], stdout=log, stderr=log, start_new_session=True)
    _STARTED.append(proc)
    _state(config).write_text(json.dumps({"pid": proc.pid, "port": port}))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            _api(port, "GET", "/version")
            return port
        if proc.poll() is not None:
            raise TestbedError(f"toxiproxy-server exited ({proc.returncode}): see "
                               f"{config.state_dir / 'toxiproxy.log'}")
        time.sleep(0.05)
    raise TestbedError("toxiproxy-server did not answer within 30 s")


def ensure(config: TestbedConfig, sites: list[SiteId]) -> None:
    """Toxiproxy running with one proxy per site at its link's gateway end, toxics set."""
    if not config.has_wan:
        return
    port = _running(config) or _start(config)
    proxies = []
    for site in sites:
        here, there = config.wan_ips(site.index)
        proxies.append({"name": site.name, "listen": f"{here}:{SSH_PORT}",
                        "upstream": f"{there}:{SSH_PORT}", "enabled": True})
    _api(port, "POST", "/populate", proxies)
    for site in sites:
        _delay(port, site.name, link_of(site.name).rtt_ms)


def _delay(port: int, name: str, rtt_ms: int) -> None:
    """Proxy `name` holds each direction's data for half of `rtt_ms`."""
    for toxic in _api(port, "GET", f"/proxies/{name}/toxics") or []:
        _api(port, "DELETE", f"/proxies/{name}/toxics/{toxic['name']}")
    for stream in ("upstream", "downstream"):
        _api(port, "POST", f"/proxies/{name}/toxics", {
            "name": f"delay-{stream}", "type": "latency", "stream": stream,
            "toxicity": 1.0, "attributes": {"latency": rtt_ms // 2, "jitter": 0}})


def add_proxy(config: TestbedConfig, name: str, upstream: str, rtt_ms: int) -> str:
    """A link of its own (no rate limit) from a loopback port to `upstream` (host:port),
    with this round trip; returns its host:port. For extra login hosts (testbed.login_hosts)."""
    port = _running(config) or _start(config)
    listen = f"127.0.0.1:{_free_port()}"
    _api(port, "POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream,
                                    "enabled": True})
    _delay(port, name, rtt_ms)
    return listen


def set_delay(config: TestbedConfig, name: str, rtt_ms: int) -> None:
    """Give the link `name` another round trip, at once (open connections too)."""
    port = _running(config)
    if port is None:
        raise TestbedError("this testbed's WAN links are not running: `gridgate testbed up`")
    _delay(port, name, rtt_ms)


def remove_proxy(config: TestbedConfig, name: str) -> None:
    port = _running(config)
    if port is not None:
        with contextlib.suppress(OSError):
            _api(port, "DELETE", f"/proxies/{name}")


def cut(config: TestbedConfig, name: str, on: bool = True) -> None:
    """Cut the link `name` (its open connections closed, new ones refused: a site gone
    from the network), or (`on=False`) mend it."""
    port = _running(config)
    if port is None:
        raise TestbedError("this testbed's WAN links are not running: `gridgate testbed up`")
    _api(port, "POST", f"/proxies/{name}", {"enabled": not on})


def black_hole(config: TestbedConfig, name: str, on: bool = True) -> None:
    """Have the link `name` swallow everything from now on, its open connections too (a
    site that hangs: nothing refused, nothing answered), or (`on=False`) pass it again."""
    port = _running(config)
    if port is None:
        raise TestbedError("this testbed's WAN links are not running: `gridgate testbed up`")
    if on:
        _api(port, "POST", f"/proxies/{name}/toxics", {
            "name": "black-hole", "type": "timeout", "stream": "downstream",
            "toxicity": 1.0, "attributes": {"timeout": 0}})
    else:
        _api(port, "DELETE", f"/proxies/{name}/toxics/black-hole")


def set_link(config: TestbedConfig, site: SiteId, link: Link) -> None:
    """Give the running testbed's link to `site` another RTT and rate, at once (open
    connections too); `up` sets `LINKS` again. For benchmarks that sweep a link."""
    port = _running(config)
    if port is None:
        raise TestbedError("this testbed's WAN links are not running: `gridgate testbed up`")
    _delay(port, site.name, link.rtt_ms)
    network.shape_wan(config, site, link.rate_mbit)


def stop(config: TestbedConfig) -> bool:
    """Stop this testbed's Toxiproxy; whether one ran."""
    if _running(config) is None:
        return False
    pid = json.loads(_state(config).read_text())["pid"]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    for proc in [p for p in _STARTED if p.pid == pid]:
        proc.wait(timeout=30)  # started by this process: reap it
        _STARTED.remove(proc)
    _state(config).unlink(missing_ok=True)
    return True
