"""Signing a researcher's short-lived SSH certificate (issue 33): what the gateway does
before each new connection to a certificate site (a new ed25519 key pair, the certificate,
the key in OpenSSH's format), against OpenSSH's own `ssh-keygen -s` signing a key that
already exists, as a site's CA script would, measured in the same run. Prints JSON; not
a test.

    .venv/bin/python benchmarks/certificate_signing.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from adapters.ssh.certificates import CertificatePolicy, issue, key_id  # noqa: E402

TARGET_MS = 1.0
POLICY = CertificatePolicy(("192.0.2.10/32",))


def gateway_ms(runs: int) -> list[float]:
    ca = Ed25519PrivateKey.generate()
    ident = key_id("alice", "commands")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        issue(ca, "alice", ident, POLICY, datetime.now(UTC))
        times.append(1000 * (time.perf_counter() - t0))
    return times


def signer_ms(runs: int) -> list[float]:
    """The whole path before a connection: the user looked up (not disabled), the CA key
    that signs now read, the certificate signed (gateway.services.sites.certificates)."""
    from gateway.auth.accounts import create_local_user
    from gateway.auth.ssh_ca import SshCa
    from gateway.db.base import utcnow
    from gateway.db.engine import transaction
    from gateway.runtime import build_runtime
    from gateway.services.sites.certificates import CertificateSigner
    from gateway.settings import Settings
    from gateway.siteconfig.access import Certificates

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", database_url=f"sqlite:///{tmp}/gw.db",
                            run_worker=False, local_site_enabled=False,
                            public_url="http://gateway.test")
        runtime = build_runtime(settings)
        try:
            with transaction(runtime.sessions) as session:
                create_local_user(session, "alice", "correct horse battery")
            signer = CertificateSigner(SshCa(settings.ssh_ca_dir), runtime.sessions, utcnow)
            sign = signer.credentials("site", "alice", "alice", Certificates(
                source_addresses=["192.0.2.10/32"]))
            sign()
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                sign()
                times.append(1000 * (time.perf_counter() - t0))
            return times
        finally:
            runtime.close()


def ssh_keygen_ms(runs: int) -> list[float]:
    """`ssh-keygen -s ca -I id -n alice -V +5m -O source-address=... -O clear key.pub`."""
    with tempfile.TemporaryDirectory() as tmp:
        ca, key = Path(tmp) / "ca", Path(tmp) / "key"
        for path in (ca, key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                           check=True)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "gridgate:alice:commands",
                            "-n", "alice", "-V", "-1m:+5m", "-O", "clear",
                            "-O", "source-address=192.0.2.10/32", f"{key}.pub"], check=True)
            times.append(1000 * (time.perf_counter() - t0))
        return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"median_ms": round(statistics.median(ordered), 4),
            "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 4),
            "min_ms": round(ordered[0], 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    gateway_ms(50)  # warm up
    ours = summary(gateway_ms(args.runs))
    whole = summary(signer_ms(args.runs // 4))
    baseline = summary(ssh_keygen_ms(max(20, args.runs // 20)))
    print(json.dumps({
        "benchmark": "certificate_signing", "cpus": os.cpu_count(),
        "what": "new ed25519 key pair + certificate (one principal, key id, source-address, "
                "5 min, no extensions) + the key as OpenSSH PEM",
        "gateway": ours, "gateway_with_user_check_and_ca_read_sqlite": whole,
        "baseline_ssh_keygen_s_existing_key": baseline,
        "gateway_over_baseline": round(ours["median_ms"] / baseline["median_ms"], 4),
        "target_median_ms_max": TARGET_MS,
        "met": max(ours["median_ms"], whole["median_ms"]) < TARGET_MS}, indent=2))


if __name__ == "__main__":
    main()
