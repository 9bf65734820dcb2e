"""Fixtures for the SSH transport tests: real sshd servers (tests/ssh/sshd.py), targets."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.ssh import SshTarget, SshTransport
from adapters.ssh.openssh.stream_plan import StreamPlan
from tests.ssh.sshd import TEST_USER, Sshd, ensure_user, start_sshd

DEADLINE = 20.0
# argv elements a shell would act on; each must arrive as one literal argument.
HOSTILE = [
    "x; touch {marker} $(id)",
    "`touch {marker}`",
    "a\nb; touch {marker}\n",
    "it's \"quoted\" \\ back",
    "$HOME ${{PATH}} *",
    "",
    "-n",
    "héllo ✓",
    "|| touch {marker} &",
]


def wait_for(what: str, check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """Poll `check` until it returns something truthy; fail after `deadline` seconds."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def target_for(server: Sshd, **overrides: Any) -> SshTarget:
    """An SshTarget for `server`: its pinned host key, its client key."""
    fields: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": server.port,
        "user": server.user,
        "host_keys": (server.host_key_line,),
        "key_path": str(server.client_key),
        "site": f"test-{server.port}",
        "connect_timeout": 10.0,
    }
    fields.update(overrides)
    return SshTarget(**fields)


def processes_matching(text: str) -> list[int]:
    """PIDs whose command line contains `text`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry))
    return found


@pytest.fixture(scope="session")
def sshd() -> Iterator[Sshd]:
    """One sshd shared by tests that leave it running."""
    server = start_sshd()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def transport(sshd: Sshd) -> Iterator[SshTransport]:
    """A transport to the shared sshd, closed afterwards. Its large copies go over two
    streams whatever the round trip it measures (under load, loopback's varies): the
    tests that use it are about how copies are striped; how many streams a link asks
    for is tests/ssh/test_stream_plan.py's and benchmarks/staging_throughput.py's."""
    t = SshTransport(target_for(sshd))
    if t.bulk is not None:
        t.bulk.plan = StreamPlan(2, 2)
    try:
        yield t
    finally:
        t.close()


@pytest.fixture
def fresh_sshd() -> Iterator[Sshd]:
    """A private sshd for a test that stops, restarts or reconfigures it."""
    server = start_sshd()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def remote_dir() -> Iterator[Path]:
    """An empty directory owned by the test user, removed afterwards."""
    entry = ensure_user(TEST_USER)
    path = Path(entry.pw_dir) / f"gw-test-{uuid.uuid4().hex[:10]}"
    path.mkdir(mode=0o755)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
