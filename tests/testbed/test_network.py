"""The testbed's link deletion: what is already gone is not an error, anything else is."""

from __future__ import annotations

import os

import pytest

from testbed.config import TestbedError
from testbed.network import delete_link, ip, link_exists

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creates a network link (root)")


def test_a_link_gone_before_its_delete_is_not_an_error() -> None:
    # A veth goes with its peer: the second delete finds it gone, as when the kernel
    # removed a link between the testbed's check and its delete.
    pair = (f"tbdl{os.getpid() % 100000}a", f"tbdl{os.getpid() % 100000}b")
    ip("link", "add", pair[0], "type", "veth", "peer", "name", pair[1])
    assert link_exists(pair[1])
    delete_link(pair[0])
    assert not link_exists(pair[1])
    delete_link(pair[1])


def test_a_link_that_stays_is_an_error() -> None:
    with pytest.raises(TestbedError, match="ip link del lo: "):
        delete_link("lo")  # the loopback device cannot be deleted
    assert link_exists("lo")
