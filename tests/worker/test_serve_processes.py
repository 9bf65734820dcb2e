"""`gridgate serve --processes N`: N children share the port and die with the parent."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.worker.gateway_process import GatewayProcess, free_port


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_two_processes_serve_and_die_with_parent(tmp_path: Path) -> None:
    port = free_port()
    gateway = GatewayProcess({"GRIDGATE_DATA_DIR": str(tmp_path / "data"),
                              "GRIDGATE_PORT": str(port), "GRIDGATE_RUN_WORKER": "false",
                              "GRIDGATE_DATABASE_URL": f"sqlite:///{tmp_path / 'gw.db'}"},
                             tmp_path / "serve.log", args=("--processes", "2"))
    gateway.start()
    try:
        assert gateway.proc is not None
        deadline = time.monotonic() + 30
        while len(children_of(gateway.proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        children = children_of(gateway.proc.pid)
        assert len(children) == 2, children
        for _ in range(20):
            assert httpx.get(f"{gateway.url}/api/v1/health", timeout=5).status_code == 200
        gateway.kill9()  # the parent dies without a chance to clean up
        deadline = time.monotonic() + 30
        while any(alive(c) for c in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(alive(c) for c in children), "children outlived their parent"
    finally:
        for child in children_of(gateway.proc.pid if gateway.proc else -1):
            os.kill(child, signal.SIGKILL)
        gateway.stop()
