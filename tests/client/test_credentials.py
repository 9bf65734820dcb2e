"""The credentials file: 0600 in a 0700 directory, atomic, never sent to another gateway."""

from __future__ import annotations

import json
import os
import re
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gateway.client.credentials import (
    Credentials,
    CredentialStore,
    StoredTokenProvider,
    config_dir,
    credentials_path,
)
from gateway.client.errors import AuthenticationRequired, SessionExpired
from gateway.client.oauth import TokenResponse
from tests.client.live import LiveGateway


def creds(gateway: str = "http://gw.example:8642", **changes: Any) -> Credentials:
    base = Credentials(gateway=gateway, access_token="at", refresh_token="rt",
                       expires_at=time.time() + 3600, client_id="gridgate-cli",
                       token_endpoint=f"{gateway}/oauth/token")
    return replace(base, **changes)


def test_config_dir_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GRIDGATE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert config_dir() == tmp_path / "cfg"
    assert credentials_path() == tmp_path / "cfg" / "credentials.json"
    monkeypatch.delenv("GRIDGATE_CONFIG_DIR")
    assert config_dir().name == "gridgate"


def test_save_is_0600_in_a_0700_dir_even_with_a_loose_umask(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "new" / "dir" / "credentials.json")
    saved = creds()
    old = os.umask(0o000)
    try:
        store.save(saved)
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert store.load() == saved


def test_save_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(creds(access_token="one"))
    store.save(creds(access_token="two"))
    loaded = store.load()
    assert loaded is not None and loaded.access_token == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["credentials.json"]
    data = json.loads(store.path.read_text())
    assert set(data) == {"gateway", "access_token", "refresh_token", "expires_at",
                         "client_id", "token_endpoint"}


def test_delete_and_missing(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    assert store.load() is None
    assert store.delete() is False
    store.save(creds())
    assert store.delete() is True
    assert store.load() is None


def test_corrupt_file_asks_to_log_in(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.path.write_text("{not json")
    with pytest.raises(AuthenticationRequired, match="gridgate login"):
        store.load()


def test_provider_returns_a_fresh_token_without_network(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(creds())
    assert StoredTokenProvider("http://gw.example:8642/", store)() == "at"


def test_provider_refuses_another_gateway(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(creds())
    with pytest.raises(AuthenticationRequired, match=re.escape("logged in to http://gw.example:8642")):
        StoredTokenProvider("http://evil.example", store)()


def test_provider_without_login(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationRequired, match="not logged in"):
        StoredTokenProvider("http://gw", CredentialStore(tmp_path / "none.json"))()


def test_expired_without_refresh_token(tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(creds(expires_at=time.time() - 1, refresh_token=None))
    # Issue 14: the hint names the gateway (not the default one) to log in to.
    expected = re.escape("Your session has expired; run "
                         "'gridgate login --gateway http://gw.example:8642'.")
    with pytest.raises(SessionExpired, match=expected):
        StoredTokenProvider("http://gw.example:8642", store)()


def test_refreshed_keeps_the_refresh_token_unless_rotated() -> None:
    old = creds()
    same = old.refreshed(TokenResponse("new", 60, None, None, "Bearer"))
    assert (same.access_token, same.refresh_token) == ("new", "rt")
    rotated = old.refreshed(TokenResponse("new", 60, "rt2", None, "Bearer"))
    assert rotated.refresh_token == "rt2"
    assert rotated.expires_at is not None and rotated.expires_at > time.time() + 30
    assert creds(expires_at=time.time() + 30).expires_soon()
    assert not creds(expires_at=None).expires_soon()


def test_expired_token_with_dead_refresh_token_at_a_real_gateway(
        gateway: LiveGateway, tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "credentials.json")
    store.save(creds(gateway.url, expires_at=time.time() - 1, refresh_token="bogus"))
    with pytest.raises(SessionExpired):
        StoredTokenProvider(gateway.url, store)()
