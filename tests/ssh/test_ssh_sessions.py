"""Session channels opened ahead (adapters.ssh.sessions), against a real sshd: a command
takes one opened ahead and sends its exec at once, and those ahead count as sessions, so
a transport never holds more than `max_sessions`, with sshd's MaxSessions set to that
number (it would refuse one more)."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator

import pytest

from adapters.errors import TransportError
from adapters.ssh import SshTransport
from tests.ssh.conftest import target_for, wait_for
from tests.ssh.sshd import Sshd, start_sshd

MAX = 2


@pytest.fixture(scope="module")
def tight_sshd() -> Iterator[Sshd]:
    server = start_sshd(extra_config=[f"MaxSessions {MAX}"])
    try:
        yield server
    finally:
        server.cleanup()


def test_a_command_takes_the_session_opened_ahead(sshd: Sshd) -> None:
    transport = SshTransport(target_for(sshd))
    sessions = transport.sessions
    try:
        assert transport.run(["echo", "first"]).stdout == b"first\n"
        assert (sessions.opened, sessions.taken_ahead) == (1, 0)
        for n in range(5):
            wait_for("a session opened ahead", lambda: sessions.ready)
            assert transport.run(["echo", str(n)]).stdout == f"{n}\n".encode()
        assert (sessions.opened, sessions.taken_ahead) == (1, 5)
        assert transport.connects == 1
    finally:
        transport.close()
    assert not sessions.ready


def test_never_more_sessions_than_max_sessions(tight_sshd: Sshd) -> None:
    """MAX commands held open at once, a third waiting for a slot, and the one opened
    ahead: sshd (MaxSessions MAX) would refuse any session past MAX."""
    transport = SshTransport(target_for(tight_sshd, max_sessions=MAX))
    hold = f"/tmp/gw-hold-{uuid.uuid4().hex}"
    outputs: list[bytes] = []
    errors: list[TransportError] = []

    def held(n: int) -> None:
        try:
            result = transport.run(["sh", "-c", f"while [ ! -e {hold} ]; do sleep 0.05; done;"
                                    f" echo {n}"], timeout=60)
            outputs.append(result.stdout)
        except TransportError as exc:
            errors.append(exc)

    try:
        assert transport.run(["true"]).exit_status == 0  # connected; one opens ahead
        wait_for("a session opened ahead", lambda: transport.sessions.ready)
        threads = [threading.Thread(target=held, args=(n,)) for n in range(MAX + 1)]
        for thread in threads:
            thread.start()
        with open(hold, "w"):
            pass
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert sorted(outputs) == [f"{n}\n".encode() for n in range(MAX + 1)]
    finally:
        transport.close()
        if os.path.exists(hold):
            os.unlink(hold)
