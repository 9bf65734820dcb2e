"""A local job's network: its own loopback, never the host's; outbound only on request.

Each case runs a real job through the local adapter, bwrap and (outbound) slirp4netns,
on a "host" of its own: a network namespace this test creates (`unshare --net --mount`,
which needs root), with a loopback server standing for the gateway and PostgreSQL and,
on a veth, a server standing for the outside world (tests/adapters/sandbox_network_host.py).
Both ways the gateway runs: as root (jobs as `nobody`) and as an ordinary account (a user
namespace); the latter as `nobody` with the system's python3, whose files it can read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters.sandbox_network_host import OUTSIDE

CODE_ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"
# The host of its own: loopback up, OUTSIDE on a veth, and a tun device anyone may open
# (slirp4netns needs one; some machines make the real one root's only). All of it in the
# new namespaces: the machine's own network and /dev stay as they are.
SETUP = f"""
set -e
ip link set lo up
ip link add gg-outside type veth peer name gg-peer
ip addr add {OUTSIDE}/24 dev gg-outside
ip link set gg-outside up
ip link set gg-peer up
mount -t tmpfs -o mode=0755 tmpfs /dev/net
mknod -m 0666 /dev/net/tun c 10 200
exec "$@"
"""
UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creating a test host needs root")


def system_python_runs_adapters() -> bool:
    """Whether the system Python, run as nobody, imports the adapters and these tests
    from this checkout (not when the checkout lies in a directory only root may read)."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return False
    done = subprocess.run([*UNPRIVILEGED, SYSTEM_PYTHON, "-c",
                           "import adapters.local.runner, tests.adapters.sandbox_network_host"],
                          env={"PYTHONPATH": str(CODE_ROOT)}, capture_output=True, check=False)
    return done.returncode == 0


def run_on_own_host(network: str, gateway: str) -> dict[str, str]:
    """What a job with `network` reached, the gateway running as root or unprivileged."""
    if gateway == "root":
        command = [sys.executable]
    elif system_python_runs_adapters():
        command = [*UNPRIVILEGED, SYSTEM_PYTHON]
    else:
        pytest.skip(f"{SYSTEM_PYTHON} (3.11+), run as nobody, must import this checkout "
                    "(readable by nobody) to run a gateway as nobody here")
    command += ["-m", "tests.adapters.sandbox_network_host", network]
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", SETUP,
         "setup", *command],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(CODE_ROOT)},
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def reached(result: dict[str, str]) -> dict[str, str]:
    """Target name -> "reached <greeting>" or "failed <why>", from the job's output."""
    lines = [line.split(" ", 1) for line in result["stdout"].splitlines()]
    return {name: outcome for name, outcome in lines}


@pytest.mark.parametrize("gateway", ["root", "unprivileged"])
def test_by_default_a_job_reaches_only_its_own_loopback(gateway: str) -> None:
    result = run_on_own_host("none", gateway)
    assert result["state"] == "COMPLETED", result
    seen = reached(result)
    assert seen["own-loopback"] == "reached hello from own", result
    assert seen["host-loopback"] == "failed Connection refused", result
    assert seen["outside"] == "failed Network is unreachable", result
    assert seen["slirp-gateway"] == "failed Network is unreachable", result


@pytest.mark.skipif(shutil.which("slirp4netns") is None,
                    reason="slirp4netns is not installed: tests/run.sh installs it")
@pytest.mark.parametrize("gateway", ["root", "unprivileged"])
def test_outbound_reaches_out_but_never_the_hosts_loopback(gateway: str) -> None:
    result = run_on_own_host("outbound", gateway)
    assert result["state"] == "COMPLETED", result
    seen = reached(result)
    assert seen["own-loopback"] == "reached hello from own", result
    assert seen["outside"] == "reached hello from outside", result
    assert seen["host-loopback"] == "failed Connection refused", result
    # slirp4netns's name for the host's loopback is refused (--disable-host-loopback).
    assert seen["slirp-gateway"].startswith("failed"), result
