"""The testbed's WAN links, checked against what they should be (prints JSON; not a test;
root, brings up a testbed of its own and takes it down).

Per site, over its WAN link and over its LAN address (the baseline, same run):
- a command's round trip on a pooled SSH connection (median of 20): at least the link's
  RTT over the link, and about one RTT more than over the LAN;
- a fresh connection and one command, as `ssh site true` does (median of 5): SSH's
  handshake costs several round trips, which the link multiplies;
- one scp upload of 64 MiB: its throughput against the link's rate and against the bound
  one SSH stream has over a round trip, its channel window / RTT (OpenSSH's window is
  2 MiB), the reason parallel streams exist (issue 32, item 3).

    sudo .venv/bin/python benchmarks/wan_links.py
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.ssh import SshTarget, SshTransport  # noqa: E402
from testbed.state import SiteInfo  # noqa: E402
from tests.testbed.fixture import running_testbed, ssh_argv, unique_config  # noqa: E402

ACCOUNT = "gwcomm"
SCP_BYTES = 64 * 1024 * 1024
SSH_WINDOW = 2 * 1024 * 1024


def transport(site: SiteInfo, host: str) -> SshTransport:
    return SshTransport(SshTarget(host=host, port=site.ssh_port, user=ACCOUNT,
                                  host_keys=(site.host_key,), key_path=site.key(ACCOUNT),
                                  site=site.name))


def pooled_ms(site: SiteInfo, host: str, runs: int = 20) -> float:
    t = transport(site, host)
    try:
        t.run(["true"])
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            t.run(["true"])
            times.append(time.perf_counter() - started)
    finally:
        t.close()
    return round(1000 * statistics.median(times), 2)


def fresh_ms(site: SiteInfo, known: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(ssh_argv(site, ACCOUNT, "true", known), check=True,
                       capture_output=True)
        times.append(time.perf_counter() - started)
    return round(1000 * statistics.median(times), 1)


def scp_mbit(site: SiteInfo, known: str, source: Path) -> float:
    """One scp upload of `source`: Mbit/s."""
    argv = ["scp", "-q", "-F", "none", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", site.key(ACCOUNT),
            "-P", str(site.ssh_port), str(source), f"{ACCOUNT}@{site.ip}:/tmp/gw-wan-bench"]
    started = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return round(SCP_BYTES * 8 / 1e6 / (time.perf_counter() - started), 1)


def measure(site: SiteInfo, tmp: Path, source: Path) -> dict[str, Any]:
    assert site.wan_ip is not None and site.wan_rtt_ms is not None
    known = tmp / f"known-{site.name}"
    known.write_text(f"{site.ip} {site.host_key}\n{site.wan_ip} {site.host_key}\n")
    wan = dataclasses.replace(site, ip=site.wan_ip)
    rtt, rate = site.wan_rtt_ms, site.wan_rate_mbit or 0.0
    window_bound = SSH_WINDOW * 8 / 1e6 / (rtt / 1000)
    out = {
        "link": {"rtt_ms": rtt, "rate_mbit": rate},
        "command_ms": {"wan": pooled_ms(site, site.wan_ip), "lan": pooled_ms(site, site.ip)},
        "ssh_true_fresh_ms": {"wan": fresh_ms(wan, str(known)),
                              "lan": fresh_ms(site, str(known))},
        "scp_64mib_mbit": {"wan": scp_mbit(wan, str(known), source),
                           "lan": scp_mbit(site, str(known), source)},
        "bounds_mbit": {"link_rate": rate, "one_stream_window_over_rtt": round(window_bound, 1),
                        "one_stream": round(min(rate, window_bound), 1)},
    }
    out["checks"] = {
        "command_at_least_rtt": out["command_ms"]["wan"] >= rtt,
        "command_rtt_multiple": round((out["command_ms"]["wan"] - out["command_ms"]["lan"])
                                      / rtt, 2),
        "scp_within_one_stream_bound": out["scp_64mib_mbit"]["wan"] <= 1.05 * min(
            rate, window_bound),
        "scp_share_of_one_stream_bound": round(out["scp_64mib_mbit"]["wan"]
                                               / min(rate, window_bound), 2),
    }
    return out


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("root is needed: the benchmark brings up a testbed of its own")
    with tempfile.TemporaryDirectory(prefix="gw-wan-") as raw, \
            running_testbed(unique_config()) as testbed:
        tmp = Path(raw)
        source = tmp / "payload"
        source.write_bytes(os.urandom(SCP_BYTES))
        sites = {name: measure(site, tmp, source) for name, site in testbed.sites.items()}
    print(json.dumps({"benchmark": "wan_links", "cpus": os.cpu_count(), "sites": sites,
                      "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                     indent=2))


if __name__ == "__main__":
    main()
