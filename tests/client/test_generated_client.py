"""A client generated from the gateway's own /openapi.json by openapi-python-client (from
PyPI) works: it imports, and submits, lists and cancels a job on a real gateway, with
the typed models and problem documents the document describes."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import httpx
import pytest

from gateway.client.oauth import AuthorizationServer
from tests.client.live import LiveGateway

PACKAGE = "gridgate_generated"


@pytest.fixture(scope="module")
def generated(gateway: LiveGateway, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[ModuleType]:
    """The generated package, imported from a temporary directory."""
    root = tmp_path_factory.mktemp("generated")
    document = root / "openapi.json"
    document.write_bytes(httpx.get(f"{gateway.url}/openapi.json").content)
    (root / "config.yaml").write_text(f"post_hooks: []\npackage_name_override: {PACKAGE}\n")
    made = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(document),
         "--meta", "none", "--config", str(root / "config.yaml"),
         "--output-path", str(root / PACKAGE)],
        capture_output=True, text=True, timeout=120, check=False)
    # Warnings name parts of the document the generator could not model: none allowed.
    assert made.returncode == 0 and "Warning" not in made.stdout + made.stderr, \
        made.stdout + made.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def _module(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_generated_client_submits_lists_and_cancels(generated: ModuleType,
                                                    gateway: LiveGateway) -> None:
    client_id, secret = gateway.new_client("generated")
    with AuthorizationServer(gateway.url) as server:
        token = server.client_credentials(client_id, secret).access_token
    client = generated.AuthenticatedClient(base_url=gateway.url, token=token,
                                           raise_on_unexpected_status=True)
    submit, list_jobs = _module("api.jobs.submit_job"), _module("api.jobs.list_jobs")
    cancel, get_job = _module("api.jobs.cancel_job"), _module("api.jobs.get_job")
    models = _module("models")
    spec = models.JobSpec.from_dict({"name": "generated", "executable": "/bin/sleep",
                                     "args": ["600"], "site": "local"})
    with client:
        job = submit.sync(client=client, body=spec)
        assert isinstance(job, models.JobOut) and job.state == "ACCEPTED"
        page = list_jobs.sync(client=client, limit=10)
        assert isinstance(page, models.JobList)
        assert job.id in [item.id for item in page.items] and page.next_cursor is None
        cancelled = cancel.sync(client=client, job_id=job.id)
        # Cancelled at once while ACCEPTED, or once the site confirms.
        assert isinstance(cancelled, models.JobOut)
        assert cancelled.state == "CANCELLED" or cancelled.cancel_requested
        # An error comes back as the documented problem document, typed.
        missing = get_job.sync_detailed(client=client, job_id="0" * 8)
        assert missing.status_code == 404
        assert isinstance(missing.parsed, models.Problem)
        assert missing.parsed.type_ == "/problems/not-found"
