"""The sign-in points refuse guessing: the device-login page's password (per account and
per client address) and user code (per address and per code), and a client's secret at the
token endpoint (per client id and per address). Failures within a window lead to 429 with
Retry-After; counts live in the database, so every gateway process sees them; a success
clears the count of what was guessed right."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from gateway.auth.device_approval import USER_CODE_ALPHABET
from tests.auth.conftest import PUBLIC_URL, AuthRuntime, make_app, make_auth_runtime
from tests.auth.test_client_credentials import robot
from tests.auth.test_device_flow import PASSWORD, add_user, decide, error_of, start


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


def _dead_codes(live: set[str], count: int) -> list[str]:
    """`count` well-formed user codes that are none of the `live` ones."""
    letters = USER_CODE_ALPHABET
    codes = (f"BBBB-BB{a}{b}" for a in letters for b in letters)
    return [c for c in codes if c not in live][:count]


def test_wrong_user_codes_from_one_address_are_throttled(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    add_user(auth)
    mine, theirs = start(api)["user_code"], start(api)["user_code"]
    guesser = _client(auth, "203.0.113.9")
    limit = auth.settings.login_max_failures_per_address
    for n, code in enumerate(_dead_codes({mine, theirs}, limit)):
        wrong = decide(guesser, code, username=f"user{n}")
        assert wrong.status_code == 400 and "That code is not valid" in wrong.text
    # Even the right code and password are refused now, and a live code reads as a
    # dead one: the answer no longer tells them apart.
    for code in (mine, _dead_codes({mine, theirs}, limit + 1)[-1]):
        refused = decide(guesser, code)
        assert refused.status_code == 429, refused.text
        assert "Too many failed attempts" in refused.text and "That code" not in refused.text
    window = auth.settings.login_failure_window_seconds
    assert int(refused.headers["retry-after"]) == window
    # Another address is not throttled, nor is the code: the address was guessing.
    assert decide(_client(auth, "198.51.100.30"), theirs).status_code == 200
    clock.now += timedelta(seconds=window - 1)
    assert decide(guesser, mine).status_code == 429
    clock.now += timedelta(seconds=1)
    assert decide(guesser, mine).status_code == 200


def test_one_code_tried_from_many_addresses_is_throttled(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    add_user(auth)
    live = start(api)["user_code"]
    [code, other] = _dead_codes({live}, 2)
    for n in range(auth.settings.login_max_failures_per_account):
        assert decide(_client(auth, f"203.0.113.{n + 1}"), code).status_code == 400
    fresh = _client(auth, "198.51.100.40")
    assert decide(fresh, code.lower().replace("-", " ")).status_code == 429
    assert decide(fresh, other).status_code == 400
    assert decide(fresh, live).status_code == 200


def _client_credentials(api: TestClient, client_id: str, secret: str) -> httpx.Response:
    return api.post("/oauth/token", data={"grant_type": "client_credentials"},
                    auth=(client_id, secret))


def test_wrong_client_secrets_are_throttled_per_client(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    client_id, secret = robot(auth)
    limit = auth.settings.login_max_failures_per_account
    for n in range(limit):  # from as many addresses: the client's secret is guessed
        wrong = _client_credentials(_client(auth, f"203.0.113.{n + 1}"), client_id, "guess")
        assert wrong.status_code == 401 and error_of(wrong) == "invalid_client"
        clock.now += timedelta(seconds=10)
    refused = _client_credentials(api, client_id, secret)
    assert refused.status_code == 429 and error_of(refused) == "invalid_client", refused.text
    window = auth.settings.login_failure_window_seconds
    assert int(refused.headers["retry-after"]) == window - 10 * limit
    assert "Too many failed client authentications" in refused.json()["error_description"]
    # Sent as client_secret_post, the same client is refused all the same.
    posted = api.post("/oauth/token", data={"grant_type": "client_credentials",
                                            "client_id": client_id, "client_secret": secret})
    assert posted.status_code == 429
    clock.now += timedelta(seconds=window - 10 * limit)
    assert _client_credentials(api, client_id, secret).status_code == 200
    # That success cleared the client's count: the full allowance again.
    for _ in range(limit - 1):
        assert _client_credentials(api, client_id, "guess").status_code == 401
    assert _client_credentials(api, client_id, secret).status_code == 200


def test_wrong_client_secrets_from_one_address_are_throttled(
        api: TestClient, auth: AuthRuntime, clock: FakeClock) -> None:
    client_id, secret = robot(auth)
    guesser = _client(auth, "203.0.113.50")
    for n in range(auth.settings.login_max_failures_per_address):
        # Many clients, real or not, each guessed a few times.
        assert _client_credentials(guesser, f"client-{n}", "guess").status_code == 401
    refused = _client_credentials(guesser, client_id, secret)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert _client_credentials(_client(auth, "198.51.100.50"), client_id,
                               secret).status_code == 200
    clock.now += timedelta(seconds=auth.settings.login_failure_window_seconds)
    assert _client_credentials(guesser, client_id, secret).status_code == 200


def test_wrong_client_secrets_count_across_processes(
        api: TestClient, auth: AuthRuntime, second_process: AuthRuntime) -> None:
    client_id, secret = robot(auth)
    other = TestClient(make_app(second_process), base_url=PUBLIC_URL)
    for n in range(auth.settings.login_max_failures_per_account):
        assert _client_credentials(api if n % 2 else other, client_id,
                                   "guess").status_code == 401
    assert _client_credentials(other, client_id, secret).status_code == 429
    assert _client_credentials(api, client_id, secret).status_code == 429
