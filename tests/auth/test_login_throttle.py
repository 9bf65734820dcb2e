"""The device-login password form refuses guessing: per account and per client address,
failures within a window lead to 429 with Retry-After; counts live in the database, so
every gateway process sees them; a success clears the account's count."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.auth.conftest import PUBLIC_URL, AuthRuntime, make_app, make_auth_runtime
from tests.auth.test_device_flow import PASSWORD, add_user, decide, start


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(auth: AuthRuntime) -> FakeClock:
    fake = FakeClock()
    auth.clock = fake
    return fake


def _client(auth: AuthRuntime, address: str) -> TestClient:
    return TestClient(make_app(auth), base_url=PUBLIC_URL, client=(address, 40000))


def _wrong(api: TestClient, user_code: str, username: str = "alice") -> httpx.Response:
    return decide(api, user_code, username=username, password="wrong guess")


def test_account_is_locked_after_five_failures_until_they_age_out(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    add_user(auth)
    code = start(api)["user_code"]
    for _ in range(auth.settings.login_max_failures_per_account):
        assert _wrong(api, code).status_code == 400
        clock.now += timedelta(seconds=10)
    # Now even the right password is not checked.
    locked = decide(api, code)
    assert locked.status_code == 429, locked.text
    window = auth.settings.login_failure_window_seconds
    # The first failure was 50 s ago: it ages out after window - 50 s.
    assert int(locked.headers["retry-after"]) == window - 50
    assert "Too many failed attempts" in locked.text
    # Another address does not help: the account is what is being guessed.
    assert decide(_client(auth, "198.51.100.20"), code).status_code == 429
    clock.now += timedelta(seconds=window - 50)
    assert decide(api, code).status_code == 200


def test_success_clears_the_account_count(api: TestClient, auth: AuthRuntime,
                                          clock: FakeClock) -> None:
    add_user(auth)
    limit = auth.settings.login_max_failures_per_account
    first = start(api)["user_code"]
    for _ in range(limit - 1):
        assert _wrong(api, first).status_code == 400
    assert decide(api, first).status_code == 200
    second = start(api)["user_code"]
    for _ in range(limit):  # the full allowance again, not just what was left
        assert _wrong(api, second).status_code == 400
    assert decide(api, second).status_code == 429


def test_one_address_guessing_many_accounts_is_locked(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    add_user(auth)
    code = start(api)["user_code"]
    guesser = _client(auth, "203.0.113.5")
    for n in range(auth.settings.login_max_failures_per_address):
        assert _wrong(guesser, code, username=f"user{n}").status_code == 400
    refused = decide(guesser, code)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    # The accounts themselves are not locked for everyone else.
    assert decide(_client(auth, "198.51.100.7"), code).status_code == 200


@pytest.fixture
def second_process(tmp_path: Path, database_url: str, auth: AuthRuntime
                   ) -> Iterator[AuthRuntime]:
    """Another gateway process: its own engine and app on the same database."""
    other = make_auth_runtime(tmp_path, database_url)
    try:
        yield other
    finally:
        other.close()


def test_failures_count_across_processes(api: TestClient, auth: AuthRuntime,
                                         second_process: AuthRuntime) -> None:
    add_user(auth)
    code = start(api)["user_code"]
    other = TestClient(make_app(second_process), base_url=PUBLIC_URL)
    limit = auth.settings.login_max_failures_per_account
    for n in range(limit):
        assert _wrong(api if n % 2 else other, code).status_code == 400
    assert decide(other, code).status_code == 429
    assert decide(api, code).status_code == 429


def test_right_password_first_time_is_unaffected(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    assert decide(api, start(api)["user_code"], password=PASSWORD).status_code == 200
