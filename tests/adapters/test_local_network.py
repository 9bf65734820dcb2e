"""A local job's network: its own loopback, never the host's; outbound only on request.

Each case runs a real job through the local adapter, bwrap and (outbound) slirp4netns,
on a "host" of its own: a network namespace this test creates (`unshare --net --mount`,
which needs root), with a loopback server standing for the gateway and PostgreSQL and,
on a veth, a server standing for the outside world (tests/adapters/sandbox_network_host.py).
Both ways the gateway runs: as root (jobs as `nobody`) and as an ordinary account (a user
namespace); the latter as `nobody` with the system's python3, from a copy of the code it
imports that `nobody` may read (CI clones the checkout into a directory only root reads).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.local.network import await_loopback
from tests.adapters.sandbox_network_host import OUTSIDE

CODE_ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"
# A shared mount with another below it, as `ip netns add` leaves /run/netns and its
# namespaces (and systemd every mount): the job must leave both mounted.
SHARED_MOUNT = "/dev/net"
BELOW_SHARED = f"{SHARED_MOUNT}/below"
# The host of its own: loopback up, OUTSIDE on a veth, a tun device anyone may open
# (slirp4netns needs one; some machines make the real one root's only) on a shared mount,
# and a mount below that. All of it in the new namespaces: the machine's own network,
# mounts and /dev stay as they are.
SETUP = f"""
set -e
ip link set lo up
ip link add gg-outside type veth peer name gg-peer
ip addr add {OUTSIDE}/24 dev gg-outside
ip link set gg-outside up
ip link set gg-peer up
mount -t tmpfs -o mode=0755 tmpfs {SHARED_MOUNT}
mount --make-shared {SHARED_MOUNT}
mknod -m 0666 {SHARED_MOUNT}/tun c 10 200
mkdir {BELOW_SHARED}
mount -t tmpfs -o mode=0755 tmpfs {BELOW_SHARED}
exec "$@"
"""
UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creating a test host needs root")


@functools.cache
def code_for_nobody() -> Path:
    """The code the unprivileged gateway imports (the adapters, the text rules and the
    host script, all standard library beneath), copied into a directory `nobody` may
    read; removed when the tests end."""
    root = Path(tempfile.mkdtemp(prefix="gridgate-code-"))
    atexit.register(shutil.rmtree, root, True)
    for package in ("adapters", "rules"):
        shutil.copytree(CODE_ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("tests/__init__.py", "tests/adapters/__init__.py",
                 "tests/adapters/sandbox_network_host.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CODE_ROOT / name, root / name)
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def system_python_runs_adapters() -> bool:
    """Whether the system Python, run as nobody, imports the adapters and the host script."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return False
    done = subprocess.run([*UNPRIVILEGED, SYSTEM_PYTHON, "-c",
                           "import adapters.local.runner, tests.adapters.sandbox_network_host"],
                          env={"PYTHONPATH": str(code_for_nobody())}, capture_output=True,
                          check=False)
    return done.returncode == 0


def run_on_own_host(network: str, gateway: str) -> dict[str, Any]:
    """What a job with `network` reached, the gateway running as root or unprivileged."""
    if gateway == "root":
        command, code = [sys.executable], CODE_ROOT
    elif system_python_runs_adapters():
        command, code = [*UNPRIVILEGED, SYSTEM_PYTHON], code_for_nobody()
    else:
        pytest.skip(f"{SYSTEM_PYTHON} (3.11+, standard library only) must import the "
                    "adapters to run a gateway as nobody here")
    command += ["-m", "tests.adapters.sandbox_network_host", network]
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", SETUP,
         "setup", *command],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(code)},
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def reached(result: dict[str, Any]) -> dict[str, str]:
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


@pytest.mark.skipif(shutil.which("slirp4netns") is None,
                    reason="slirp4netns is not installed: tests/run.sh installs it")
def test_outbound_as_root_leaves_the_hosts_mounts_alone() -> None:
    # As root slirp4netns sandboxes itself in a mount namespace that shared the host's
    # mounts, then dropped them: every mount below a shared one went on the host too. CI
    # saw a live testbed's /run/netns entries turn into plain files ("setting the network
    # namespace ... failed: Invalid argument") while other tests ran outbound jobs.
    result = run_on_own_host("outbound", "root")
    assert result["state"] == "COMPLETED", result
    assert BELOW_SHARED in result["mounts"], result


# bwrap reports its child before the child gives its loopback 127.0.0.1, and slirp4netns
# brings `lo` up: started first, it made bwrap fail ("loopback: Failed RTM_NEWADDR"; 6 in
# 100 outbound runs on a loaded machine). These hold a process in a fresh network
# namespace at the point bwrap's child is in when it reports itself.
HELD_NAMESPACE = ["unshare", "--net", "sh", "-c",
                  "read add; [ \"$add\" = add ] && ip addr add 127.0.0.1/8 dev lo; read end"]


def held_namespace() -> tuple[subprocess.Popen[str], int]:
    """A process in a network namespace without 127.0.0.1, and that namespace, held."""
    process = subprocess.Popen(HELD_NAMESPACE, stdin=subprocess.PIPE, text=True)
    while os.stat(f"/proc/{process.pid}/ns/net").st_ino == os.stat("/proc/self/ns/net").st_ino:
        # unshare execs sh once the namespace is its own; wait for exactly that.
        os.sched_yield()
    return process, os.open(f"/proc/{process.pid}/ns/net", os.O_RDONLY)


def test_slirp4netns_waits_until_the_sandbox_gave_its_loopback_an_address() -> None:
    process, netns = held_namespace()
    try:
        with pytest.raises(OSError, match="did not set up its loopback in time"):
            await_loopback(process.pid, netns, deadline=time.monotonic())
        assert process.stdin is not None
        process.stdin.write("add\n")
        process.stdin.flush()
        await_loopback(process.pid, netns, deadline=time.monotonic() + 60)
    finally:
        os.close(netns)
        process.communicate("end\n", timeout=60)


def test_a_sandbox_that_ended_before_its_loopback_is_told_as_such() -> None:
    process, netns = held_namespace()
    try:
        process.communicate("no\nend\n", timeout=60)
        with pytest.raises(OSError, match="ended before its loopback was up"):
            await_loopback(process.pid, netns, deadline=time.monotonic() + 60)
    finally:
        os.close(netns)
