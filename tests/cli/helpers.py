"""Run `gridgate` in-process (typer's CliRunner) against a live gateway."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner, Result

from gateway.cli.main import app
from tests.client.live import LiveGateway


class Cli:
    """Runs `gridgate ...` in-process with a given gateway and config dir."""

    def __init__(self, gateway: LiveGateway, config_dir: Path) -> None:
        self.gateway = gateway
        self.env = {"GRIDGATE_URL": gateway.url, "GRIDGATE_CONFIG_DIR": str(config_dir),
                    **gateway.server_env}
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, code: int | None = 0) -> Result:
        result = self.runner.invoke(app, list(args), env=self.env, input=input)
        if code is not None:
            assert result.exit_code == code, (
                f"gridgate {' '.join(args)} exited {result.exit_code}, expected {code}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}")
        return result

    def json(self, *args: str, code: int = 0) -> Any:
        """The command's `--json` output, parsed."""
        return json.loads(self(*args, "--json", code=code).stdout)


def approve_device_code(gateway: LiveGateway, user_code: str, username: str,
                        password: str) -> None:
    """What a person does in the browser: open the page, enter the code, approve."""
    with httpx.Client(base_url=gateway.url) as browser:
        page = browser.get("/oauth/device", params={"user_code": user_code})
        assert page.status_code == 200
        match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert match, page.text
        decision = browser.post("/oauth/device", data={
            "csrf_token": match.group(1), "user_code": user_code, "username": username,
            "password": password, "action": "approve"})
        assert decision.status_code == 200, decision.text
