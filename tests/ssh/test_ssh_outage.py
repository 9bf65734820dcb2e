"""Outages against real sshd servers: reconnect, backoff, circuit breaker, isolation, jumps.

The breakers here run on a hand-advanced monotonic clock, so backoff and cooldown
decisions are deterministic; every network event is real.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import uuid
from collections.abc import Iterator

import pytest

from adapters.errors import SiteUnavailable
from adapters.ssh import Backoff, CircuitBreaker, SshTransport, SshTransportPool
from adapters.transport import CircuitOpen, ConnectionFailed, HostKeyMismatch
from tests.ssh.conftest import target_for, wait_for
from tests.ssh.sshd import Sshd, start_sshd

STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def second_sshd() -> Iterator[Sshd]:
    server = start_sshd()
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def third_sshd() -> Iterator[Sshd]:
    server = start_sshd()
    try:
        yield server
    finally:
        server.cleanup()


def _probes_ended(server: Sshd) -> int:
    """Connections sshd saw end before even the key exchange (the readiness probes)."""
    return len([line for line in server.log().splitlines()
                if re.fullmatch(r"Connection (closed|reset) by 127\.0\.0\.1 port \d+", line)])


def test_outage_backs_off_opens_the_circuit_and_recovers(fresh_sshd: Sshd) -> None:
    clock = ManualClock()
    breaker = CircuitBreaker("roadrunner", threshold=2, backoff=Backoff(1.0, 2.0, 10.0),
                             cooldown=Backoff(30.0, 2.0, 300.0), clock=clock)
    transport = SshTransport(target_for(fresh_sshd, site="roadrunner"), breaker=breaker)
    try:
        assert transport.run(["true"]).exit_status == 0
        fresh_sshd.stop()
        # A connection that died unnoticed since its session was opened ahead makes the
        # next command's outcome unknown (adapters.ssh.sessions); here it was noticed.
        wait_for("the connection's end to be seen", lambda: not transport.connected)

        # The pooled connection died with sshd: the reconnect is refused (attempt 1).
        with pytest.raises(ConnectionFailed) as caught:
            transport.run(["true"])
        first = caught.value
        assert first.transient and isinstance(first, SiteUnavailable)
        assert not isinstance(first, CircuitOpen)
        assert "cannot connect to roadrunner" in first.message
        assert "Connection refused" in first.message

        # Within the backoff delay, calls fail fast without touching the network.
        with pytest.raises(ConnectionFailed, match="backing off after 1 failed attempt"):
            transport.run(["true"])

        clock.advance(10)
        with pytest.raises(ConnectionFailed, match="Connection refused"):
            transport.run(["true"])  # attempt 2: the circuit opens
        assert breaker.is_open

        probes = _probes_ended(fresh_sshd)
        fresh_sshd.start()  # back, but the circuit stays open until the cooldown passes
        # The fixture's readiness probe is logged by a child of its own, maybe late:
        # count connections once its end is in the log.
        wait_for("the readiness probe's log", lambda: _probes_ended(fresh_sshd) > probes)
        before = fresh_sshd.count("Connection from")
        with pytest.raises(CircuitOpen) as opened:
            transport.run(["true"])
        error = opened.value
        assert error.transient and isinstance(error, SiteUnavailable)
        assert re.search(rf"site roadrunner unreachable since {STAMP}, retrying at {STAMP}",
                         error.message), error.message
        assert "2 failed connection attempts" in error.message
        assert error.site == "roadrunner" and error.retry_at > error.since
        assert fresh_sshd.count("Connection from") == before

        clock.advance(300)
        assert transport.run(["true"]).exit_status == 0
        assert not breaker.is_open and breaker.state().failures == 0
        assert transport.connects == 2
    finally:
        transport.close()


def test_reconnects_silently_after_the_connection_dies(fresh_sshd: Sshd) -> None:
    transport = SshTransport(target_for(fresh_sshd))
    try:
        assert transport.run(["true"]).exit_status == 0
        fresh_sshd.stop()
        wait_for("the connection's end to be seen", lambda: not transport.connected)
        fresh_sshd.start()
        # The old connection is dead; nothing was sent on it, so the command goes over a
        # new one without the caller seeing an error.
        assert transport.run(["echo", "again"]).stdout == b"again\n"
        assert transport.connects == 2
    finally:
        transport.close()


def test_connection_lost_mid_command_is_reported_not_retried(fresh_sshd: Sshd) -> None:
    transport = SshTransport(target_for(fresh_sshd))
    marker = f"/tmp/gw-ran-{uuid.uuid4().hex}"
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            transport.run(["sh", "-c", f"echo x >> {marker}; sleep 60"], timeout=60)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    try:
        wait_for("the command to start", lambda: os.path.exists(marker))
        fresh_sshd.stop()  # kills the connection (and the command) mid-run
        thread.join()
        assert len(outcome) == 1 and isinstance(outcome[0], ConnectionFailed), outcome
        assert "may or may not have completed" in outcome[0].message
        with open(marker) as ran:
            assert ran.read() == "x\n"  # it ran exactly once: never re-sent
    finally:
        transport.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(marker)


def test_a_hung_site_does_not_block_another(sshd: Sshd) -> None:
    # A "site" whose TCP handshake completes (the kernel's backlog) but that never sends
    # an SSH banner: the call to it hangs until we close the listener (or 60 s pass).
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    pool = SshTransportPool()
    stuck = pool.get(target_for(sshd, port=hung.getsockname()[1], site="hung",
                                connect_timeout=60.0))
    healthy = pool.get(target_for(sshd, site="healthy"))
    outcome: list[BaseException] = []

    def call_hung() -> None:
        try:
            stuck.run(["true"], timeout=60.0)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=call_hung)
    thread.start()
    try:
        for _ in range(20):
            assert healthy.run(["true"]).exit_status == 0
        # The healthy site answered 20 times while the hung one was still connecting.
        assert thread.is_alive()
    finally:
        hung.close()  # resets the pending connection: the hung call fails now
        thread.join()
        pool.close()
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionFailed), outcome
    assert "cannot connect to hung" in outcome[0].message


def test_jump_host(sshd: Sshd, second_sshd: Sshd) -> None:
    jump = target_for(second_sshd, site="bastion")
    via = target_for(sshd, site="behind", jump=jump)
    transport = SshTransport(via)
    try:
        assert transport.run(["printf", "%s", "through"]).stdout == b"through"
        assert second_sshd.count("Accepted publickey for") == 1
    finally:
        transport.close()

    # With the bastion down, the site behind it is unreachable, although its own sshd is
    # up: the traffic really goes through the jump host.
    second_sshd.stop()
    transport = SshTransport(via)
    try:
        with pytest.raises(ConnectionFailed, match="through jump host bastion"):
            transport.run(["true"])
        assert SshTransport(target_for(sshd)).run(["true"]).exit_status == 0
    finally:
        transport.close()


def test_jump_host_pins_both_keys(sshd: Sshd, second_sshd: Sshd) -> None:
    jump = target_for(second_sshd, site="bastion")
    wrong_target = target_for(sshd, site="behind", jump=jump,
                              host_keys=(second_sshd.host_key_line,))
    with pytest.raises(HostKeyMismatch, match="behind"):
        SshTransport(wrong_target).run(["true"])
    wrong_jump = target_for(second_sshd, site="bastion", host_keys=(sshd.host_key_line,))
    with pytest.raises(HostKeyMismatch, match="bastion"):
        SshTransport(target_for(sshd, jump=wrong_jump)).run(["true"])


def test_pool_shares_transports_and_the_jump_connection(
    sshd: Sshd, second_sshd: Sshd, third_sshd: Sshd
) -> None:
    pool = SshTransportPool()
    jump = target_for(second_sshd, site="bastion")
    try:
        first = pool.get(target_for(sshd, site="behind", jump=jump))
        assert pool.get(target_for(sshd, site="behind", jump=jump)) is first
        other = pool.get(target_for(third_sshd, site="also-behind", jump=jump))
        assert first.run(["true"]).exit_status == 0
        assert other.run(["true"]).exit_status == 0
        bastion = pool.get(jump)
        assert bastion.connects == 1  # both tunnels ride on one bastion connection
        assert second_sshd.count("Accepted publickey for") == 1
        assert pool.breaker("behind") is first.breaker
        # New settings for the same account: a new transport; the old one keeps working
        # for whoever holds it until the pool closes.
        changed = pool.get(target_for(sshd, site="behind", jump=jump, connect_timeout=3.0))
        assert changed is not first
        assert first.run(["true"]).exit_status == 0
    finally:
        pool.close()
    assert not first.connected and not other.connected and not bastion.connected


class _CannotSend:
    """A socket that can no longer send (as after the peer went away) but still reads:
    the peer is told nothing, so paramiko's reader thread cannot notice first. (Shutting
    the real socket for writing sent the peer a FIN, whose answer the reader could see
    before the test looked: flaky under load.)"""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def send(self, data: bytes) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


def test_a_send_that_fails_on_a_pooled_connection_reconnects(fresh_sshd: Sshd) -> None:
    """The pooled connection's socket can no longer send while paramiko's reader thread
    has not noticed: the failed send (EOFError) means a dead connection, replaced once,
    not a channel timeout."""
    transport = SshTransport(target_for(fresh_sshd))
    try:
        assert transport.run(["true"]).exit_status == 0
        pooled = transport.connection._conn
        assert pooled is not None
        # paramiko's packetizer sends through its own reference to the socket.
        packetizer = pooled.packetizer
        packetizer._Packetizer__socket = _CannotSend(  # type: ignore[attr-defined]
            packetizer._Packetizer__socket)  # type: ignore[attr-defined]
        assert pooled.is_active()  # nothing has told the reader thread
        assert transport.run(["true"]).exit_status == 0
        assert transport.connects == 2
    finally:
        transport.close()
