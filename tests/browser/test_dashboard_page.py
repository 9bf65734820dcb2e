"""The committee dashboard in Debian's Chromium: a person signs in on the page, sees each
allocation with its burn-down and the usage by site and by user, and every number shown
is the report API's for the same caller; another site's page cannot sign them out, and
signing out on the page kills the session's token. Screenshots are saved in the test's
tmp dir (the path is printed).

The gateway is a real `gridgate serve` process; its database holds the bank history of
tests/services/report_fixtures.py, made through the bank's own services, with alice (the
browser's user) as the PI of one project.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from playwright.sync_api import Page, Route, expect
from sqlalchemy import select

from gateway.auth.accounts import create_local_user
from gateway.db.engine import make_engine, make_session_factory, transaction
from gateway.db.models import User
from gateway.settings import Settings
from tests.browser.conftest import PASSWORD, USERNAME, Gateway
from tests.services import report_fixtures as rf
from tests.services.report_fixtures import World


@pytest.fixture(scope="module")
def world(gateway: Gateway) -> Iterator[World]:
    """The history, ending a minute ago, in the gateway's own database."""
    settings = Settings(data_dir=Path(gateway.env["GRIDGATE_DATA_DIR"]))
    engine = make_engine(settings.resolved_database_url)
    try:
        with transaction(make_session_factory(engine)) as s:
            alice = s.scalar(select(User.id).where(User.username == USERNAME))
            assert alice is not None
            bob = create_local_user(s, "bob", PASSWORD).id
            carol = create_local_user(s, "carol", PASSWORD).id
            now = datetime.now(UTC).replace(microsecond=0)
            made = rf.build(s, alice, bob, carol, now=now)
    finally:
        engine.dispose()
    yield made


def _sign_in(page: Page, gateway: Gateway, password: str = PASSWORD) -> None:
    response = page.goto(f"{gateway.url}/dashboard")
    assert response is not None and response.status == 401
    page.fill("#username", USERNAME)
    page.fill("#password", password)
    page.click("button[type=submit]")


def _number(text: str) -> float:
    return float(text.replace(",", "").strip())


def _api(gateway: Gateway, page: Page, path: str, **params: str) -> Any:
    """The API's answer to the same person: the page's session is an API token."""
    [cookie] = [c for c in page.context.cookies() if c["name"] == "gridgate_dashboard"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    r = httpx.get(f"{gateway.url}/api/v1{path}", params=params, timeout=30,
                  headers={"Authorization": f"Bearer {cookie['value']}"})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_dashboard_shows_the_apis_numbers(gateway: Gateway, world: World, page: Page,
                                              tmp_path: Path) -> None:
    _sign_in(page, gateway)
    expect(page.locator("h2", has_text="Allocations")).to_be_visible()
    as_of = page.locator("#as-of time").get_attribute("datetime")
    assert as_of is not None
    # The numbers as of the moment the page was drawn.
    page.goto(f"{gateway.url}/dashboard?" + urlencode({"project": world.astro, "as_of": as_of}))
    expect(page.locator("#allocations")).to_be_visible()
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=shot, full_page=True)
    print(f"dashboard screenshot: {shot}")
    assert shot.stat().st_size > 10_000

    api = _api(gateway, page, "/reports/allocations", project=world.astro, as_of=as_of)
    [allocation] = api["allocations"]
    row = page.locator(f"#allocations tr[data-allocation-id='{allocation['id']}']")
    for field in ("awarded_su", "used_su", "held_su", "remaining_su", "burn_su_per_day"):
        shown = _number(row.locator(f"[data-field={field}]").inner_text())
        assert shown == pytest.approx(allocation[field], abs=0.0005), field
    assert (allocation["awarded_su"], allocation["remaining_su"]) == (110.0, 95.0)
    chart = page.locator(f"figure[data-chart=burn-down][data-allocation-id='{allocation['id']}']")
    points = chart.locator("polyline.remaining").get_attribute("points") or ""
    assert len(points.split()) >= 4  # the grant, j1, j2, j3's charge and refund, the lien

    for by, table in (("site", "#usage-by-site"), ("user", "#usage-by-user")):
        report = _api(gateway, page, "/reports/usage", by=by, project=world.astro, as_of=as_of)
        keys = [r["key"] for r in report["rows"]]
        shown_keys = page.locator(f"{table} tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.key)")
        assert shown_keys == [*keys, "total"]
        for r in [*report["rows"], {**report["total"], "key": "total"}]:
            cells = page.locator(f"{table} tr[data-key='{r['key']}']")
            assert _number(cells.locator("[data-field=net_su]").inner_text()) == pytest.approx(
                r["net_su"], abs=0.0005)
        assert len(page.locator(f"{table} + svg rect.bar").all()) == len(keys)
    by_user = _api(gateway, page, "/reports/usage", by="user", project=world.astro)
    assert {r["key"]: r["net_su"] for r in by_user["rows"]} == {"alice": 2.0, "bob": 8.0}


def test_the_dashboard_is_behind_login(gateway: Gateway, world: World, page: Page,
                                       tmp_path: Path) -> None:
    response = page.goto(f"{gateway.url}/dashboard")
    assert response is not None and response.status == 401
    expect(page.locator("form.login")).to_be_visible()
    assert httpx.get(f"{gateway.url}/dashboard", timeout=30).status_code == 401
    _sign_in(page, gateway, password="not the password")
    expect(page.locator("#error")).to_have_text("Wrong username or password.")
    page.screenshot(path=tmp_path / "dashboard-wrong-password.png", full_page=True)
    page.fill("#username", USERNAME)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("#allocations")).to_be_visible()
    # alice is no part of carol's project: as on the API, it does not exist for her.
    missing = page.goto(f"{gateway.url}/dashboard?project={world.geo}")
    assert missing is not None and missing.status == 404
    expect(page.locator("#error")).to_contain_text("No project named")
    bad = page.goto(f"{gateway.url}/dashboard?as_of=yesterday")
    assert bad is not None and bad.status == 400
    expect(page.locator("#error")).to_contain_text("'yesterday' is not a time")
    page.goto(f"{gateway.url}/dashboard")
    page.click("text=Sign out")
    expect(page.locator("form.login")).to_be_visible()
    assert not [c for c in page.context.cookies() if c["name"] == "gridgate_dashboard"]


def test_only_the_page_signs_out_and_the_token_dies_with_it(
        gateway: Gateway, world: World, page: Page) -> None:
    _sign_in(page, gateway)
    expect(page.locator("#allocations")).to_be_visible()
    [cookie] = [c for c in page.context.cookies() if c["name"] == "gridgate_dashboard"]
    token = {"Authorization": f"Bearer {cookie['value']}"}
    balance = f"{gateway.url}/api/v1/projects/{world.astro}/balance"
    assert httpx.get(balance, headers=token, timeout=30).status_code == 200

    # Another site's page (served by the browser itself) with a sign-out button: its POST
    # carries the session cookie, not the SameSite=Strict CSRF cookie.
    foreign = "http://foreign.test/"

    def serve_foreign(route: Route) -> None:
        route.fulfill(content_type="text/html", body=(
            f'<form method="post" action="{gateway.url}/dashboard/logout">'
            '<input type="hidden" name="csrf_token" value="guessed">'
            '<button type="submit">Win a prize</button></form>'))

    page.route(f"{foreign}**", serve_foreign)
    page.goto(foreign)
    page.click("text=Win a prize")
    expect(page.locator("#error")).to_contain_text("you are still signed in")
    page.goto(f"{gateway.url}/dashboard")
    expect(page.locator("#allocations")).to_be_visible()
    assert httpx.get(balance, headers=token, timeout=30).status_code == 200

    page.click("text=Sign out")
    expect(page.locator("form.login")).to_be_visible()
    refused = httpx.get(balance, headers=token, timeout=30)
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    # Putting the old cookie back does not bring the session back.
    page.context.add_cookies([cookie])  # type: ignore[list-item]
    again = page.goto(f"{gateway.url}/dashboard")
    assert again is not None and again.status == 401
    expect(page.locator("#error")).to_contain_text("session has ended")
