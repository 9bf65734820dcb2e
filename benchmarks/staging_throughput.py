"""Staging throughput: gridgate's SFTP path vs OpenSSH scp, in the same run (prints JSON).

Brings up its own testbed (needs root) and moves one file (1 GiB by default, random
bytes on the gateway's tmpfs) several ways, interleaved, `--runs` times each:

1. client -> site: `SshTransport.upload` (raw transfer: SFTP striped over two OpenSSH
   `ssh` processes, adapters.ssh.openssh.bulk) and `stage_file` (transfer plus the sha256 on the
   site and the atomic rename), vs `scp FILE site:` (OpenSSH, pinned known_hosts,
   StrictHostKeyChecking=yes, its default cipher; the target), and, for reference,
   `scp -c aes128-gcm@openssh.com` (the cipher gridgate picks).
2. site -> site through the gateway: `copy_site_to_site` roadrunner -> galaxy (streamed,
   verified on galaxy; the sha256 is given, as the worker knows it), vs `scp -3`.

MB/s is 10^6 bytes per wall second. CPU s/GiB is this side's CPU (user + sys of this
process and its children: scp, ssh); the sites' sshd run on the same 2 cores and are
not counted for either. Each transfer writes a new file (removed afterwards) and starts
after `sync`; each run starts with a different contender. The file's sha256 is computed
once before (an upload to the gateway is finalized by its sha256, so the worker has it).

With `--rtt 80`, both sites' wide-area links (testbed.wan) are set to that round trip
at 1 Gbit/s and every transfer, the gateway's and scp's, goes over them (issue 32's
target there: 3x scp and 3x `scp -3`, the gateway's streams sized for the link).

    sudo .venv/bin/python benchmarks/staging_throughput.py [--size 1GiB] [--runs 2]
                                                            [--rtt MS]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import resource
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.ssh import SshTarget, SshTransport  # noqa: E402
from adapters.transfer import copy_site_to_site, stage_file  # noqa: E402
from testbed import wan  # noqa: E402
from testbed.config import TestbedConfig  # noqa: E402
from testbed.sites import SITE_REFS  # noqa: E402
from testbed.state import SiteInfo, TestbedInfo  # noqa: E402
from tests.testbed.fixture import running_testbed, session_config, ssh  # noqa: E402

ACCOUNT = "gwcomm"
TARGET_UPLOAD_OVER_SCP = 1.0
TARGET_SITE_TO_SITE_OVER_SCP3 = 1.0
TARGET_OVER_WAN = 3.0  # both, over a link with a round trip (issue 32)
WAN_RATE_MBIT = 1000
# The cipher gridgate's bulk path prefers, for the extra scp baseline.
GCM = "aes128-gcm@openssh.com"
GIB = 1 << 30


def parse_size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower().removesuffix("ib").removesuffix("b")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def transport_for(site: SiteInfo) -> SshTransport:
    """Over the address `site` has (its WAN one, when `over_wan` gave it that)."""
    return SshTransport(SshTarget(host=site.ip, port=site.ssh_port, user=ACCOUNT,
                                  host_keys=(site.host_key,), key_path=site.key(ACCOUNT),
                                  site=f"{site.name}-bench"))


def scp_options(known_hosts: str, *sites: SiteInfo) -> list[str]:
    options = ["-F", "none", "-o", "StrictHostKeyChecking=yes",
               "-o", f"UserKnownHostsFile={known_hosts}",
               "-o", "GlobalKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
               "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"]
    for site in sites:
        options += ["-i", site.key(ACCOUNT)]
    return options


# The transports' standing OpenSSH masters (adapters.ssh.openssh.master): daemons, not children,
# whose CPU (the gateway side's encryption) is read from /proc.
MASTER_PIDS: list[int] = []


def _cpu_seconds() -> float:
    """CPU of this process, of its finished children (scp, ssh) and of the transports'
    masters."""
    own = sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                resource.getrusage(resource.RUSAGE_CHILDREN)))
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in MASTER_PIDS:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            own += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return own


def measure(size: int, what: Callable[[], Any]) -> dict[str, float]:
    """Wall MB/s and CPU s/GiB (this process and its children) of one call.

    Dirty pages are written back first (sync), so one transfer's writeback does not
    slow the next one's writes on the sites' shared disk.
    """
    os.sync()
    c0, t0 = _cpu_seconds(), time.perf_counter()
    what()
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - c0
    return {"wall_s": round(wall, 3), "mb_per_s": round(size / wall / 1e6, 1),
            "cpu_s_per_gib": round(cpu / (size / GIB), 3)}


def summary(samples: list[dict[str, float]]) -> dict[str, Any]:
    rates = [s["mb_per_s"] for s in samples]
    return {"mb_per_s_median": round(statistics.median(rates), 1),
            "mb_per_s_min": min(rates), "mb_per_s_max": max(rates),
            "cpu_s_per_gib_median": round(statistics.median(s["cpu_s_per_gib"]
                                                            for s in samples), 3),
            "runs": samples}


def over_wan(tb: TestbedInfo, rtt_ms: int) -> tuple[dict[str, SiteInfo], str]:
    """roadrunner and galaxy as reached over their links, set to `rtt_ms` at 1 Gbit/s,
    and a known_hosts pinning their keys at those addresses."""
    config = TestbedConfig.from_env(prefix=tb.prefix, subnet=tb.subnet)
    sites: dict[str, SiteInfo] = {}
    lines = []
    for ref in SITE_REFS:
        if ref.name in ("roadrunner", "galaxy"):
            wan.set_link(config, ref, wan.Link(rtt_ms=rtt_ms, rate_mbit=WAN_RATE_MBIT))
            site = tb.sites[ref.name]
            assert site.wan_ip is not None
            sites[ref.name] = dataclasses.replace(site, ip=site.wan_ip)
            lines.append(f"{site.wan_ip} {site.host_key}\n")
    known = Path(tempfile.mkdtemp(prefix="gw-bench-wan-")) / "known_hosts"
    known.write_text("".join(lines))
    return sites, str(known)


def restore_links(tb: TestbedInfo) -> None:
    config = TestbedConfig.from_env(prefix=tb.prefix, subnet=tb.subnet)
    for ref in SITE_REFS:
        wan.set_link(config, ref, wan.link_of(ref.name))


def bench(tb: TestbedInfo, size: int, runs: int, rtt_ms: int | None = None) -> dict[str, Any]:
    rr, galaxy = tb.sites["roadrunner"], tb.sites["galaxy"]
    known_hosts = tb.known_hosts
    if rtt_ms:
        sites, known_hosts = over_wan(tb, rtt_ms)
        rr, galaxy = sites["roadrunner"], sites["galaxy"]
    local = Path("/dev/shm") / f"gw-bench-{secrets.token_hex(4)}"
    digest = hashlib.sha256()
    with open(local, "wb") as out:
        left = size
        while left:
            block = os.urandom(min(left, 8 << 20))
            digest.update(block)
            out.write(block)
            left -= len(block)
    sha = digest.hexdigest()
    base = f"{rr.scratch_root}/gw-bench-{secrets.token_hex(4)}"
    gbase = f"{galaxy.scratch_root}/gw-bench-{secrets.token_hex(4)}"
    lan_rr, lan_galaxy = tb.sites["roadrunner"], tb.sites["galaxy"]  # for setup only
    ssh(lan_rr, ACCOUNT, ["mkdir", "-p", "-m", "0700", base])
    ssh(lan_galaxy, ACCOUNT, ["mkdir", "-p", "-m", "0700", gbase])
    t_rr, t_galaxy = transport_for(rr), transport_for(galaxy)
    t_rr.run(["true"])
    t_galaxy.run(["true"])
    figures: dict[str, list[dict[str, float]]] = {
        k: [] for k in ("upload_raw", "stage_file", "scp", "scp_gcm", "site_to_site",
                        "scp_3")}
    opts_rr = scp_options(known_hosts, rr)
    opts_both = scp_options(known_hosts, rr, galaxy)
    src_on_rr = f"{base}/source.bin"
    try:
        # The site-to-site source; also warms up (first writes allocate page cache) and
        # starts the masters the gateway's copies ride, whose CPU is then counted.
        t_rr.upload(str(local), src_on_rr)
        t_galaxy.upload(str(local), f"{gbase}/warm.bin")
        for t in (t_rr, t_galaxy):
            assert t.bulk is not None
            if (pid := t.bulk.master.pid()) is not None:
                MASTER_PIDS.append(pid)
        for run in range(runs):
            to_site: dict[str, tuple[Callable[[], Any], str]] = {
                "scp": (lambda: subprocess.run(
                    ["scp", "-q", *opts_rr, str(local), f"{ACCOUNT}@{rr.ip}:{base}/scp.bin"],
                    check=True), f"{base}/scp.bin"),
                "scp_gcm": (lambda: subprocess.run(
                    ["scp", "-q", *opts_rr, "-c", GCM, str(local),
                     f"{ACCOUNT}@{rr.ip}:{base}/scp-gcm.bin"], check=True),
                    f"{base}/scp-gcm.bin"),
                "upload_raw": (lambda: t_rr.upload(str(local), f"{base}/raw.bin"),
                               f"{base}/raw.bin"),
                "stage_file": (lambda: stage_file(t_rr, str(local), sha, size,
                                                  f"{base}/staged.bin"), f"{base}/staged.bin"),
            }
            between: dict[str, tuple[Callable[[], Any], str]] = {
                "scp_3": (lambda: subprocess.run(
                    ["scp", "-q", "-3", *opts_both, f"{ACCOUNT}@{rr.ip}:{src_on_rr}",
                     f"{ACCOUNT}@{galaxy.ip}:{gbase}/scp3.bin"], check=True),
                          f"{gbase}/scp3.bin"),
                "site_to_site": (lambda: copy_site_to_site(
                    t_rr, src_on_rr, t_galaxy, f"{gbase}/copy.bin", sha256=sha, size=size),
                                 f"{gbase}/copy.bin"),
            }
            # Each run starts with a different one, so none always goes first. Every
            # transfer writes a new file, removed afterwards (untimed), so none pays
            # for truncating another's and the sites' disk does not fill up.
            for group, transport in ((to_site, t_rr), (between, t_galaxy)):
                names = list(group)
                for name in names[run % len(names):] + names[:run % len(names)]:
                    call, written = group[name]
                    figures[name].append(measure(size, call))
                    transport.run(["rm", "-f", "--", written])
    finally:
        t_rr.close()
        t_galaxy.close()
        local.unlink()
        ssh(lan_rr, ACCOUNT, ["rm", "-rf", base], check=False)
        ssh(lan_galaxy, ACCOUNT, ["rm", "-rf", gbase], check=False)
    result = {k: summary(v) for k, v in figures.items()}
    med = {k: v["mb_per_s_median"] for k, v in result.items()}
    ratios = {
        "upload_raw_over_scp": round(med["upload_raw"] / med["scp"], 3),
        "stage_file_verified_over_scp": round(med["stage_file"] / med["scp"], 3),
        "site_to_site_verified_over_scp_3": round(med["site_to_site"] / med["scp_3"], 3),
        # Not a target: against scp told to use gridgate's cipher.
        "upload_raw_over_scp_gcm": round(med["upload_raw"] / med["scp_gcm"], 3),
        "stage_file_verified_over_scp_gcm": round(med["stage_file"] / med["scp_gcm"], 3),
    }
    target_up = TARGET_OVER_WAN if rtt_ms else TARGET_UPLOAD_OVER_SCP
    target_between = TARGET_OVER_WAN if rtt_ms else TARGET_SITE_TO_SITE_OVER_SCP3
    return {
        "benchmark": "staging_throughput", "bytes": size, "runs": runs,
        "link": ({"rtt_ms": rtt_ms, "rate_mbit": WAN_RATE_MBIT, "sites": "both, over "
                  "testbed.wan"} if rtt_ms else "LAN (the testbed's bridge, no delay)"),
        "gateway_streams": {"roadrunner": t_rr.bulk.last_streams if t_rr.bulk else None,
                            "galaxy": t_galaxy.bulk.last_streams if t_galaxy.bulk else None},
        "cpu_count": os.cpu_count(), "sites": ["roadrunner", "galaxy"],
        "gateway": {"client_to_site_raw_upload": result["upload_raw"],
                    "client_to_site_stage_file_verified": result["stage_file"],
                    "site_to_site_verified": result["site_to_site"]},
        "baselines": {"scp": result["scp"], "scp_aes128_gcm": result["scp_gcm"],
                      "scp_3": result["scp_3"]},
        "ratios": ratios,
        "targets": {"upload_over_scp_min": target_up,
                    "site_to_site_over_scp_3_min": target_between},
        "met": {"client_to_site_raw": ratios["upload_raw_over_scp"] >= target_up,
                "client_to_site_verified":
                    ratios["stage_file_verified_over_scp"] >= target_up,
                "site_to_site_verified": ratios["site_to_site_verified_over_scp_3"]
                    >= target_between},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", default="1GiB", help="bytes, or e.g. 200MiB, 1GiB")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rtt", type=int, default=None, metavar="MS",
                        help="over both sites' WAN links, set to this round trip")
    args = parser.parse_args()
    # Resumes, resends and fallbacks show on stderr (the JSON goes to stdout).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    with running_testbed(session_config()) as tb:
        try:
            print(json.dumps(bench(tb, parse_size(args.size), args.runs, args.rtt),
                             indent=2))
        finally:
            if args.rtt:
                restore_links(tb)


if __name__ == "__main__":
    main()
