"""A site's accounts keep at most `cap` idle connections open between them
(adapters.ssh.site_connections): the least recently used idle ones close when a command
goes past the cap, a connection carrying a command never does, and a closed account's
next command connects again. Against a real sshd, and the pool's wiring."""

from __future__ import annotations

import os
import threading
import uuid

import pytest

from adapters.ssh import SshTransport, SshTransportPool
from adapters.ssh.site_connections import SiteConnections
from tests.ssh.conftest import target_for, wait_for
from tests.ssh.sshd import Sshd


class Account:
    """What SiteConnections sees of a transport: idle or not, closed or not."""

    def __init__(self, busy: bool = False) -> None:
        self.busy = busy
        self.open = True

    def close_if_idle(self) -> bool:
        if self.busy:
            return False
        self.open = False
        return True


def test_the_least_recently_used_idle_accounts_close_past_the_cap() -> None:
    site = SiteConnections("s", cap=2)
    a, b, c, d = Account(), Account(busy=True), Account(), Account()
    for account in (a, b, c):
        site.used(account)
    # Three past a cap of two: the oldest (a) closes.
    assert (a.open, b.open, c.open) == (False, True, True)
    site.used(c)  # c is now the most recent, b (busy) the oldest
    site.used(d)
    # b carries a command: skipped; c, the oldest idle one, closes instead.
    assert (b.open, c.open, d.open) == (True, False, True)
    assert site.tracked() == 2


def test_the_account_at_work_is_never_closed_for_the_others() -> None:
    site = SiteConnections("s", cap=1)
    busy = [Account(busy=True) for _ in range(3)]
    for account in busy:
        site.used(account)
    assert all(a.open for a in busy)  # over the cap, but nothing idle to close
    mine = Account()
    site.used(mine)
    assert mine.open and site.tracked() == 4


def run_settled(transport: SshTransport, argv: list[str]) -> bytes:
    """Run a command, then wait for the sessions it opens ahead for the next: while they
    are being opened its connection is busy, and the cap rightly leaves it open."""
    stdout = transport.run(argv).stdout
    wait_for("the sessions opened ahead",
             lambda: transport.sessions.ready == transport.sessions.ahead)
    return stdout


def test_a_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="cap must be >= 1"):
        SiteConnections("s", cap=0)


def test_real_connections_past_the_cap_close_and_reconnect(sshd: Sshd) -> None:
    site = SiteConnections("test", cap=2)
    transports = [SshTransport(target_for(sshd), site=site) for _ in range(5)]
    try:
        for n, transport in enumerate(transports):
            assert run_settled(transport, ["echo", str(n)]) == f"{n}\n".encode()
        assert [t.connected for t in transports] == [False, False, False, True, True]
        # The first account's next command opens a new connection (the cap closes the
        # least recently used idle one: the fourth).
        assert run_settled(transports[0], ["echo", "again"]) == b"again\n"
        assert transports[0].connects == 2
        assert [t.connected for t in transports] == [True, False, False, False, True]
    finally:
        for transport in transports:
            transport.close()


def test_a_connection_carrying_a_command_stays_open(sshd: Sshd) -> None:
    site = SiteConnections("test", cap=1)
    held, *others = [SshTransport(target_for(sshd), site=site) for _ in range(3)]
    hold = f"/tmp/gw-hold-{uuid.uuid4().hex}"
    outputs: list[bytes] = []
    thread = threading.Thread(target=lambda: outputs.append(held.run(
        ["sh", "-c", f"while [ ! -e {hold} ]; do sleep 0.05; done; echo held"],
        timeout=60).stdout))
    thread.start()
    try:
        wait_for("the held command's connection", lambda: held.connected)
        for transport in others:
            run_settled(transport, ["true"])
        assert held.connected and others[0].connected is False
        with open(hold, "w"):
            pass
        thread.join(60)
        assert outputs == [b"held\n"]  # finished on the connection it started on
        assert held.connects == 1
    finally:
        thread.join(60)
        if os.path.exists(hold):
            os.unlink(hold)
        for transport in (held, *others):
            transport.close()


def test_the_pool_gives_each_site_one_cap_for_all_its_accounts(sshd: Sshd) -> None:
    pool = SshTransportPool(idle_per_site=3)
    try:  # nothing connects: the pool only hands out transports
        alice, bob, carol = (pool.get(target_for(sshd, site=site, user=user)) for site, user
                             in (("one", "alice"), ("one", "bob"), ("two", "carol")))
        assert alice.sessions.site is bob.sessions.site
        assert alice.sessions.site is not carol.sessions.site
        assert alice.sessions.site is not None and alice.sessions.site.cap == 3
    finally:
        pool.close()
