"""One local job on a host of its own, for the sandbox network tests.

Run by tests/adapters/test_local_network.py as `python -m tests.adapters.sandbox_network_host
NETWORK` inside a network namespace the test created (so nothing of the real machine
changes): that "host" has a loopback and one other address, OUTSIDE (on a veth), where a
server stands for the world; another server listens on the host's loopback, as the
gateway and PostgreSQL would. The job tries both, the host's gateway address as
slirp4netns would map it, and a server on its own loopback; this prints what it reached,
and where the host has mounts once the job ended, as JSON. Standard library and
`adapters` only: it also runs, unprivileged, under the system's python3.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from adapters.base import SubmitRequest
from adapters.local import LocalAdapter
from adapters.local.network import SLIRP4NETNS
from adapters.local.sandbox import SandboxConfig

OUTSIDE = "198.51.100.1"  # TEST-NET-2: the veth's address
SLIRP_GATEWAY = "10.0.2.2"  # slirp4netns's address for the host (its loopback, unless disabled)
GREETING = b"hello from "

# The job: connect to each target, say what came back.
JOB = """
import socket, sys
own = socket.socket()
own.bind(("127.0.0.1", 0))
own.listen()
targets = [("own-loopback", "127.0.0.1", own.getsockname()[1])]
for spec in sys.argv[1:]:
    name, host, port = spec.split(":")
    targets.append((name, host, int(port)))
for name, host, port in targets:
    try:
        with socket.create_connection((host, port), timeout=5) as conn:
            if name == "own-loopback":
                own.accept()[0].sendall(b"hello from own")
            print(name, "reached", conn.recv(64).decode())
    except OSError as exc:
        print(name, "failed", exc.strerror or exc)
"""


def serve(host: str, name: str) -> int:
    """A server greeting every connection with its name; returns its port."""
    listener = socket.socket()
    listener.bind((host, 0))
    listener.listen()

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(GREETING + name.encode())

    threading.Thread(target=accept, daemon=True).start()
    port: int = listener.getsockname()[1]
    return port


def mount_points() -> list[str]:
    """Where this host has a mount now (its mount table's fifth field)."""
    with open("/proc/self/mountinfo") as table:
        return [line.split()[4] for line in table]


def run_job(network: str) -> dict[str, Any]:
    """Run the job in the sandbox the gateway would use, with `network`."""
    outside, host = serve(OUTSIDE, "outside"), serve("127.0.0.1", "host-loopback")
    bwrap = shutil.which("bwrap")
    assert bwrap is not None
    config = SandboxConfig(
        bwrap, read_only=(sys.prefix, sys.base_prefix),
        run_as=(65534, 65534) if os.geteuid() == 0 else None,
        network="outbound" if network == "outbound" else "none",
        slirp4netns=shutil.which("slirp4netns") or SLIRP4NETNS)
    root = Path(tempfile.mkdtemp(prefix="gridgate-net-"))
    try:
        adapter = LocalAdapter(root / "jobs", None, kill_grace_seconds=1.0, sandbox=config)
        tag = f"net-{uuid.uuid4()}"
        targets = [f"outside:{OUTSIDE}:{outside}", f"host-loopback:127.0.0.1:{host}",
                   f"slirp-gateway:{SLIRP_GATEWAY}:{host}"]
        req = SubmitRequest(tag=tag, workdir=str(root / "jobs" / tag),
                            argv=[sys.executable, "-c", JOB, *targets])
        native_id = adapter.submit(req)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = adapter.status([native_id])[native_id]
            if status.state.is_final:
                break
            time.sleep(0.1)

        def read(stream: str) -> str:
            chunk = adapter.read_output(req.workdir, stream, 0, 1 << 20)  # type: ignore[arg-type]
            return chunk.data.decode()

        return {"state": status.state.value, "reason": str(status.reason),
                "stdout": read("stdout"), "stderr": read("stderr"), "mounts": mount_points()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run_job(sys.argv[1])))
