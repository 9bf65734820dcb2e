"""The session fixture `testbed` that live tests use: healthy sites, reachable with the helpers."""

from __future__ import annotations

from testbed import manager
from testbed.config import TestbedConfig
from testbed.state import TestbedInfo, load_dir
from tests.testbed.fixture import ssh


def test_session_testbed_is_up_and_reachable(testbed: TestbedInfo) -> None:
    config = TestbedConfig.from_env(testbed.prefix, testbed.subnet)
    assert manager.status(config).healthy
    assert load_dir(config.state_dir) == testbed
    for name, site in testbed.sites.items():
        assert ssh(site, "gwcomm", ["hostname"]).stdout.strip() == name
