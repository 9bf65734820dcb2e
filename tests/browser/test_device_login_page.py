"""`gridgate login` end to end, with a person at a real browser.

The gateway and the CLI run as separate processes, as on a user's machine; headless
Chromium opens the verification URL the CLI prints, and a person's keystrokes approve,
deny or fumble the login. Screenshots of each page are saved in the test's tmp dir.
"""

from __future__ import annotations

import base64
import json
import re
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from playwright.sync_api import ConsoleMessage, Page, expect

from gateway.cli import errors
from tests.browser.conftest import PASSWORD, USERNAME, Gateway

WRONG_LOGIN = "Wrong username or password."


@dataclass(frozen=True)
class Prompt:
    """What `gridgate login` tells the person to do."""

    verification_uri: str
    user_code: str
    verification_uri_complete: str


class LoginCommand:
    """`gridgate login` running in the background; its output is collected as it comes."""

    def __init__(self, gateway: Gateway, config_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli.main", "--gateway", gateway.url, "login"],
            env=gateway.cli_env(config_dir), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._out: list[str] = []
        self._err: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [self._reader(self.proc.stdout, self._out),
                         self._reader(self.proc.stderr, self._err)]

    @staticmethod
    def _reader(stream: IO[str], sink: list[str]) -> threading.Thread:
        thread = threading.Thread(target=lambda: sink.extend(stream), daemon=True)
        thread.start()
        return thread

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    @property
    def stdout(self) -> str:
        return "".join(self._out)

    def prompt(self, timeout: float = 60) -> Prompt:
        """Wait for the URL and code the command prints."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.stderr
            uri = re.search(r"To log in, open (\S+)", text)
            code = re.search(r"and enter the code: ([A-Z]{4}-[A-Z]{4})\b", text)
            complete = re.search(r"\(or open (\S+)\)", text)
            if uri and code and complete:
                return Prompt(uri.group(1), code.group(1), complete.group(1))
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"gridgate login printed no code:\n{self.stderr}")

    def wait(self, timeout: float = 60) -> int:
        """The exit code, once the command has ended and its output is read."""
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        # The readers end at EOF; then the pipes are closed (left open, they warn).
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def start_login(gateway: Gateway, config_dir: Path) -> tuple[LoginCommand, Prompt]:
    login = LoginCommand(gateway, config_dir)
    try:
        return login, login.prompt()
    except BaseException:
        login.stop()
        raise


def watch_console(page: Page) -> list[str]:
    """Errors the page logs (a CSP violation, for instance, would show up here)."""
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type not in ("error", "warning"):
            return
        # A form error is answered 400 on purpose; Chromium logs that status for the
        # document itself. Any other failed load (the page has no subresources) counts.
        own_status = (message.text.startswith("Failed to load resource")
                      and message.location.get("url", "").split("?")[0].endswith(
                          "/oauth/device"))
        if not own_status:
            problems.append(f"{message.type}: {message.text} ({message.location})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    return problems


def fill_form(page: Page, username: str, password: str, user_code: str | None = None) -> None:
    if user_code is not None:
        page.get_by_label("Code").fill(user_code)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (the gateway verifies; we only read who it names)."""
    payload = token.split(".")[1]
    padded = payload + "=" * (-len(payload) % 4)
    claims: dict[str, Any] = json.loads(base64.urlsafe_b64decode(padded))
    return claims


def test_approve_logs_the_cli_in(gateway: Gateway, page: Page, tmp_path: Path) -> None:
    config = tmp_path / "config"
    login, prompt = start_login(gateway, config)
    try:
        assert prompt.verification_uri == f"{gateway.url}/oauth/device"
        problems = watch_console(page)
        response = page.goto(prompt.verification_uri)
        assert response is not None and response.status == 200
        expect(page).to_have_title(re.compile("gridgate"))
        expect(page.get_by_role("heading", level=1)).to_contain_text("sign in a device")
        # The code field is where typing starts, so a person can type right away.
        expect(page.get_by_label("Code")).to_be_focused()
        page.keyboard.type(prompt.user_code)
        fill_form(page, USERNAME, PASSWORD)
        expect(page.get_by_label("Password")).to_have_attribute("type", "password")
        page.screenshot(path=tmp_path / "device-form.png", full_page=True)

        page.get_by_role("button", name="Approve").click()
        result = page.locator("#result")
        expect(result).to_contain_text("Approved")
        expect(result).to_contain_text(USERNAME)
        expect(result).to_contain_text(prompt.user_code)
        expect(page.get_by_label("Password")).to_have_count(0)
        page.screenshot(path=tmp_path / "device-approved.png", full_page=True)
        assert problems == []

        assert login.wait() == 0, login.stderr
    finally:
        login.stop()
    assert f"Logged in to {gateway.url}" in login.stderr

    creds_file = config / "credentials.json"
    assert stat.S_IMODE(creds_file.stat().st_mode) == 0o600
    creds = json.loads(creds_file.read_text())
    assert creds["gateway"] == gateway.url and creds["refresh_token"]
    assert jwt_claims(creds["access_token"])["username"] == USERNAME

    listed = gateway.gridgate("--gateway", gateway.url, "list", "--json", config_dir=config)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["items"] == []


def test_wrong_password_shows_an_error_and_login_waits(gateway: Gateway, page: Page,
                                                       tmp_path: Path) -> None:
    config = tmp_path / "config"
    login, prompt = start_login(gateway, config)
    try:
        problems = watch_console(page)
        page.goto(prompt.verification_uri)
        fill_form(page, USERNAME, "not the password", prompt.user_code)
        page.get_by_role("button", name="Approve").click()

        error = page.get_by_role("alert")
        expect(error).to_have_text(WRONG_LOGIN)
        # What the person typed is kept, except the password.
        expect(page.get_by_label("Code")).to_have_value(prompt.user_code)
        expect(page.get_by_label("Username")).to_have_value(USERNAME)
        expect(page.get_by_label("Password")).to_have_value("")
        page.screenshot(path=tmp_path / "device-wrong-password.png", full_page=True)

        # An unknown user gets the very same answer: the page does not reveal who exists.
        fill_form(page, "mallory", "not the password")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("alert")).to_have_text(WRONG_LOGIN)
        expect(page.get_by_label("Username")).to_have_value("mallory")
        assert problems == []

        assert login.proc.poll() is None, login.stderr
        assert not (config / "credentials.json").exists()

        # The code is still pending (a wrong password did not use it up): the right
        # password approves it now, and only now does the CLI log in.
        fill_form(page, USERNAME, PASSWORD)
        page.get_by_role("button", name="Approve").click()
        expect(page.locator("#result")).to_contain_text("Approved")
        assert login.wait() == 0, login.stderr
    finally:
        login.stop()
    assert (config / "credentials.json").exists()


def test_deny_ends_login_with_access_denied(gateway: Gateway, page: Page,
                                            tmp_path: Path) -> None:
    config = tmp_path / "config"
    login, prompt = start_login(gateway, config)
    try:
        problems = watch_console(page)
        # The complete URL carries the code: the field arrives filled in.
        page.goto(prompt.verification_uri_complete)
        expect(page.get_by_label("Code")).to_have_value(prompt.user_code)
        fill_form(page, USERNAME, PASSWORD)
        page.get_by_role("button", name="Deny").click()
        result = page.locator("#result")
        expect(result).to_contain_text("Denied")
        expect(result).to_contain_text(prompt.user_code)
        page.screenshot(path=tmp_path / "device-denied.png", full_page=True)
        assert problems == []

        assert login.wait() == errors.FAILURE, login.stderr
    finally:
        login.stop()
    assert "error: The login request was denied." in login.stderr
    assert "Traceback" not in login.stderr
    assert not (config / "credentials.json").exists()
