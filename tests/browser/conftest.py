"""Fixtures for the browser tests: one real gateway process and one headless Chromium
per module, and the `gridgate` command run as a subprocess against them.

Chromium is Debian's `chromium` package, driven by Playwright's bundled driver; no
browser is ever downloaded (`playwright install` is not used).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from gateway.settings import Settings
from tests.waiting_jobs import let_all_go
from tests.worker.gateway_process import GatewayProcess, free_port

CHROMIUM = os.environ.get("GRIDGATE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
USERNAME = "alice"
PASSWORD = "correct horse battery"


@dataclass
class Gateway:
    """A `gridgate serve` process and the environment of commands on its host."""

    url: str
    env: dict[str, str]  # the whole environment of gateway-host commands
    process: GatewayProcess

    def gridgate(self, *args: str, config_dir: Path | None = None,
                 stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run `gridgate ARGS` to completion, as the gateway host's user would."""
        return subprocess.run(
            [sys.executable, "-m", "gateway.cli.main", *args], env=self.cli_env(config_dir),
            input=stdin, capture_output=True, text=True, timeout=120, check=False)

    def cli_env(self, config_dir: Path | None = None) -> dict[str, str]:
        """`env` plus a wide terminal (URLs stay on one line) and a config dir."""
        env = {**self.env, "COLUMNS": "200", "NO_COLOR": "1"}
        if config_dir is not None:
            env["GRIDGATE_CONFIG_DIR"] = str(config_dir)
        return env


def running_gateway(root: Path, *, worker: bool) -> Iterator[Gateway]:
    """A real `gridgate serve` in `root` with the local user alice (and with its worker:
    jobs run at the local site)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        "GRIDGATE_DATA_DIR": str(root / "data"),
        "GRIDGATE_PORT": str(port),
        "GRIDGATE_PUBLIC_URL": url,
        "GRIDGATE_RUN_WORKER": "true" if worker else "false",
        # The CLI polls at the interval the server hands out; 1 s keeps the tests short.
        "GRIDGATE_DEVICE_POLL_INTERVAL_SECONDS": "1",
    }
    # The caller's own GRIDGATE_* settings (a database URL, a gateway URL) must not
    # reach this gateway or its commands; GatewayProcess merges os.environ, so replace it.
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith("GRIDGATE_")},
                **env}
    process = GatewayProcess(env, root / "gateway.log")
    process.env = full_env
    process.start()
    try:
        gw = Gateway(url, full_env, process)
        added = gw.gridgate("admin", "user", "add", USERNAME, "--password-stdin",
                            stdin=PASSWORD + "\n")
        assert added.returncode == 0, added.stderr
        yield gw
    finally:
        process.stop()
        # A job a test left waiting (a cancel its worker had not carried out yet when the
        # module ended: seen once, an axe test's job) would outlive the gateway.
        let_all_go(Settings(data_dir=root / "data").jobs_dir)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A real gateway (no worker) with the local user alice, for the whole module."""
    yield from running_gateway(tmp_path_factory.mktemp("gateway"), worker=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Debian Chromium, for the whole module."""
    if not Path(CHROMIUM).is_file():
        # Never a skip: the test command installs it (apt package `chromium`).
        pytest.fail(f"{CHROMIUM} is missing: install the Debian package 'chromium' "
                    "(tests/run.sh does), or point GRIDGATE_TEST_CHROMIUM at a Chromium.")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (own cookies) and page per test."""
    context = browser.new_context(viewport={"width": 900, "height": 700}, locale="en-US")
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        # A test's route handler can still be serving a request the page made after
        # the test's last assertion (a re-read on a late event); closing the context
        # under it raised in the NEXT test's setup (found by CI). Let it finish first.
        page.unroute_all(behavior="wait")
        context.unroute_all(behavior="wait")
        context.close()
