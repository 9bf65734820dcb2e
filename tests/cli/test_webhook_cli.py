"""`gridgate webhook create|list|deliveries|redeliver|delete` against a live gateway whose
worker delivers to a real receiver on 127.0.0.1 (the admin allows 127.0.0.0/8 here)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks

from tests.cli.helpers import Cli
from tests.client.live import LiveGateway, gateway_on
from tests.worker.webhook_receiver import Receiver, receiver


@pytest.fixture(scope="module", params=["sqlite"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway"),
                    webhook_allowed_ranges="127.0.0.0/8") as gw:
        yield gw


@pytest.fixture
def target() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


def _delivered(cli: Cli, hook: str, count: int) -> list[dict[str, Any]]:
    # Waits for an outcome (the worker's deliveries), never for a time.
    deadline = time.monotonic() + 120
    while True:
        items: list[dict[str, Any]] = cli.json("webhook", "deliveries", hook)["items"]
        if sum(d["state"] == "delivered" for d in items) >= count:
            return items
        assert time.monotonic() < deadline, items
        time.sleep(0.2)


def test_webhook_commands(cli: Cli, target: Receiver, tmp_path: Path) -> None:
    made = cli("webhook", "create", target.url, "--type", "org.gridgate.job.state")
    secret = made.stdout.strip()
    assert secret.startswith("whsec_") and "shown only now" in made.stderr
    [hook] = cli.json("webhook", "list")["items"]
    assert hook["state"] == "active" and "secret" not in hook
    assert hook["id"] in cli("webhook", "list").stdout
    spec = tmp_path / "job.yaml"
    spec.write_text("name: hooked\nexecutable: /bin/true\n")
    job = json.loads(cli("submit", str(spec), "--json").stdout)["id"]
    items = _delivered(cli, hook["id"], 1)
    assert {d["subject"] for d in items} == {job}
    for request in target.requests:
        standardwebhooks.Webhook(secret).verify(request.body, request.headers)
    table = cli("webhook", "deliveries", hook["id"]).stdout
    assert "delivered" in table and job in table
    first = items[-1]
    sent = len(target.requests)
    cli("webhook", "redeliver", hook["id"], str(first["id"]))
    # The job's later events may still be on their way: the redelivery is one of the
    # requests after those counted, with the first delivery's webhook-id.
    deadline = time.monotonic() + 120
    while first["message_id"] not in [r.headers["webhook-id"]
                                      for r in target.requests[sent:]]:
        assert time.monotonic() < deadline, "the redelivery did not come"
        time.sleep(0.2)
    cli("webhook", "delete", hook["id"])
    assert cli.json("webhook", "list")["items"] == []
    gone = cli("webhook", "delete", hook["id"], code=None)
    assert gone.exit_code != 0 and "webhook list" in gone.stderr


def test_a_private_target_is_refused_with_what_to_do(cli: Cli) -> None:
    refused = cli("webhook", "create", "https://10.0.0.7/hook", code=None)
    assert refused.exit_code != 0
    assert "webhook_allowed_ranges" in refused.stderr
