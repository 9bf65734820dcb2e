"""/docs in Debian's Chromium with every request off the gateway blocked: Swagger UI
renders the gateway's operations and its Authorize button from the gateway's own
assets, as it must on a machine with no Internet access."""

from __future__ import annotations

from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import Gateway


def test_docs_render_with_the_network_blocked(gateway: Gateway, page: Page) -> None:
    blocked: list[str] = []
    served: list[str] = []

    def only_the_gateway(route: Route) -> None:
        url = route.request.url
        if url.startswith(gateway.url + "/"):
            served.append(url)
            route.continue_()
        else:
            blocked.append(url)
            route.abort("internetdisconnected")

    page.context.route("**/*", only_the_gateway)
    page.goto(f"{gateway.url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("gridgate")
    expect(page.locator("button.authorize")).to_be_visible()
    expect(page.locator("#operations-jobs-submitJob")).to_be_visible()
    page.locator("button.authorize").click()
    # The dialog offers the OAuth client-credentials flow and a bearer token.
    expect(page.locator(".auth-container").first).to_be_visible()
    dialog = page.locator(".dialog-ux")
    expect(dialog).to_contain_text("clientCredentials")
    expect(dialog).to_contain_text("bearer")
    assert blocked == []
    assert f"{gateway.url}/docs/assets/swagger-ui-bundle.js" in served
