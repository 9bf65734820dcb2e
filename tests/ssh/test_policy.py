"""Pure parts of the SSH transport: pins, targets, backoff, the circuit breaker, the pool."""

from __future__ import annotations

import base64
import random
import re
import struct
import threading
from datetime import UTC, datetime

import pytest

from adapters.errors import SiteUnavailable
from adapters.ssh import Backoff, CircuitBreaker, HostKey, SshTarget
from adapters.ssh.hostkeys import fingerprint
from adapters.ssh.pool import TransportPool
from adapters.transport import CircuitOpen, ConnectionFailed

# A well-formed ed25519 public key line (32 arbitrary key bytes), as a `.pub` file has it.
ED25519_BLOB = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes(range(32))
ED25519_LINE = "ssh-ed25519 " + base64.b64encode(ED25519_BLOB).decode()


class ManualClock:
    def __init__(self, now: float = 500.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# --- host keys ---------------------------------------------------------------------------


def test_parse_host_key_line() -> None:
    key = HostKey.parse(ED25519_LINE + " root@login1")
    assert key.key_type == "ssh-ed25519" and key.blob == ED25519_BLOB
    assert key.line() == ED25519_LINE
    assert key.fingerprint == fingerprint(ED25519_BLOB)
    assert re.fullmatch(r"SHA256:[A-Za-z0-9+/]{43}", key.fingerprint)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("AAAAC3NzaC1lZDI1NTE5", "is not '<type> <base64>"),
        ("ssh-ed25519 not*base64", "not valid base64"),
        ("ssh-rsa " + ED25519_LINE.split()[1], "data is of type 'ssh-ed25519'"),
    ],
)
def test_bad_host_key_lines(line: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        HostKey.parse(line)


def test_target_requires_pins_and_one_key() -> None:
    with pytest.raises(ValueError, match="at least one pinned host key"):
        SshTarget(host="h", user="u", host_keys=(), key_path="/k")
    with pytest.raises(ValueError, match="exactly one of key_path, key_data and credentials"):
        SshTarget(host="h", user="u", host_keys=(ED25519_LINE,))
    with pytest.raises(ValueError, match="exactly one of key_path, key_data and credentials"):
        SshTarget(host="h", user="u", host_keys=(ED25519_LINE,), key_path="/k", key_data=b"x")
    with pytest.raises(ValueError, match="not one string"):
        SshTarget(host="h", user="u", host_keys=ED25519_LINE, key_path="/k")  # type: ignore[arg-type]


def test_target_hides_secrets_and_names_itself() -> None:
    target = SshTarget(host="login.example.org", user="gw", host_keys=[ED25519_LINE],  # type: ignore[arg-type]
                       key_data=b"-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETSECRET\n",
                       key_passphrase="hunter2")
    assert "SECRETSECRET" not in repr(target) and "hunter2" not in repr(target)
    assert target.label == "gw@login.example.org:22"
    assert target.pool_key == ("login.example.org", 22, "gw")
    assert target.host_keys == (ED25519_LINE,)  # a list is frozen into a tuple
    assert SshTarget(host="h", user="u", host_keys=(ED25519_LINE,), key_path="/k",
                     site="galaxy").label == "galaxy"


# --- backoff ------------------------------------------------------------------------------


def test_backoff_grows_is_capped_and_jittered() -> None:
    backoff = Backoff(base=1.0, factor=2.0, cap=8.0)
    rng = random.Random(7)
    for attempt, full in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (500, 8.0)]:
        delays = {backoff.delay(attempt, rng) for _ in range(50)}
        assert all(full / 2 <= d <= full for d in delays), (attempt, delays)
        assert len(delays) > 1  # jittered


# --- circuit breaker -------------------------------------------------------------------------


def make_breaker(clock: ManualClock, wall: ManualClock | None = None) -> CircuitBreaker:
    return CircuitBreaker(
        "galaxy", threshold=3, backoff=Backoff(1.0, 2.0, 10.0),
        cooldown=Backoff(60.0, 2.0, 600.0), clock=clock,
        wall_clock=wall or ManualClock(1_700_000_000.0), rng=random.Random(1),
    )


def test_breaker_backs_off_then_opens_then_half_opens() -> None:
    clock = ManualClock()
    wall = ManualClock(1_700_000_000.0)
    breaker = make_breaker(clock, wall)
    breaker.before_attempt()  # closed: go
    assert 0.5 <= breaker.record_failure("Connection refused") <= 1.0

    with pytest.raises(ConnectionFailed) as backing_off:
        breaker.before_attempt()
    assert not isinstance(backing_off.value, CircuitOpen)
    assert backing_off.value.transient and isinstance(backing_off.value, SiteUnavailable)
    assert "backing off after 1 failed attempt(s); last: Connection refused" in str(
        backing_off.value)

    clock.now += 1.0
    breaker.before_attempt()
    breaker.record_failure("Connection refused")
    clock.now += 2.0
    breaker.before_attempt()
    wait = breaker.record_failure("No route to host")
    assert breaker.is_open and 30.0 <= wait <= 60.0

    clock.now += wait - 0.001
    with pytest.raises(CircuitOpen) as opened:
        breaker.before_attempt()
    error = opened.value
    assert error.since == datetime.fromtimestamp(1_700_000_000.0, UTC)
    assert error.site == "galaxy"
    assert str(error).startswith(
        "site galaxy unreachable since 2023-11-14T22:13:20Z, retrying at 2023-11-14T22:13:20Z")
    assert "3 failed connection attempts; last: No route to host" in str(error)

    # Half-open: one caller tries, the others still fail fast meanwhile.
    clock.now += 0.002
    breaker.before_attempt()
    with pytest.raises(CircuitOpen, match="retrying now"):
        breaker.before_attempt()
    wait = breaker.record_failure("Connection refused")
    assert 60.0 <= wait <= 120.0  # the cooldown grows

    clock.now += wait
    breaker.before_attempt()
    breaker.record_success()
    assert not breaker.is_open
    state = breaker.state()
    assert (state.failures, state.since, state.retry_at, state.last_error) == (0, None, None, None)
    breaker.before_attempt()
    breaker.before_attempt()  # closed: everyone may go


def test_release_frees_the_trial_without_counting() -> None:
    clock = ManualClock()
    breaker = make_breaker(clock)
    breaker.record_failure("refused")
    clock.now += 10
    breaker.before_attempt()
    breaker.release()  # e.g. the key file was unreadable: says nothing about the site
    breaker.before_attempt()
    assert breaker.state().failures == 1


def test_state_snapshot() -> None:
    clock = ManualClock()
    breaker = make_breaker(clock, ManualClock(1_700_000_000.0))
    for _ in range(3):
        clock.now += 1000
        breaker.before_attempt()
        breaker.record_failure("timed out")
    state = breaker.state()
    assert state.open and state.failures == 3 and state.last_error == "timed out"
    assert state.retry_at is not None and state.since is not None
    assert state.retry_at > state.since


# --- the pool --------------------------------------------------------------------------------


class FakeTransport:
    """Stands in for SshTransport: the pool only builds and closes what its factory makes."""

    def __init__(self, target: SshTarget, breaker: CircuitBreaker,
                 jump: FakeTransport | None) -> None:
        self.target, self.breaker, self.jump = target, breaker, jump
        self.closed = False

    def close(self) -> None:
        self.closed = True


def target(host: str, user: str = "gw", site: str | None = None, **extra: object) -> SshTarget:
    return SshTarget(host=host, user=user, host_keys=(ED25519_LINE,), key_path="/k", site=site,
                     **extra)  # type: ignore[arg-type]


def test_pool_one_transport_per_account_one_breaker_per_site() -> None:
    pool: TransportPool[FakeTransport] = TransportPool(FakeTransport)
    bastion = target("bastion")
    a = pool.get(target("login", "alice", "roadrunner", jump=bastion))
    assert pool.get(target("login", "alice", "roadrunner", jump=bastion)) is a
    b = pool.get(target("login", "bob", "roadrunner", jump=bastion))
    assert b is not a and b.breaker is a.breaker is pool.breaker("roadrunner")
    assert a.jump is b.jump is pool.get(bastion)
    c = pool.get(target("other", "alice", "galaxy"))
    assert c.breaker is not a.breaker

    changed = pool.get(target("login", "alice", "roadrunner", jump=bastion, connect_timeout=2.0))
    assert changed is not a and not a.closed
    pool.close()
    assert all(t.closed for t in (a, b, c, changed, a.jump))  # type: ignore[union-attr]


def test_pool_is_safe_under_concurrent_gets() -> None:
    pool: TransportPool[FakeTransport] = TransportPool(FakeTransport)
    got: list[FakeTransport] = []

    def grab() -> None:
        for _ in range(200):
            got.append(pool.get(target("login", site="parnass2")))

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(t) for t in got}) == 1
