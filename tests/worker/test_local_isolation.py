"""Through the gateway: a local job cannot read the gateway's signing key; the sandbox
is probed at startup, and a setting overrides the probe."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.services.sites import local_sandbox
from gateway.settings import Settings
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post, run_until

STEAL = 'cat "$GRIDGATE_WORKDIR/../../signing-key.pem"'


def sites(client: TestClient, headers: dict[str, str]) -> dict[str, dict[str, object]]:
    items = client.get("/api/v1/sites", headers=headers).json()["items"]
    return {item["name"]: item for item in items}


def test_a_job_cannot_read_the_signing_key(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    user = make_user()
    assert sites(client, user.headers)["local"]["isolation"] == "sandbox"
    key = runtime.settings.resolved_signing_key_path
    assert key.read_bytes().startswith(b"-----BEGIN")
    spec = {"name": "steal", "executable": "/bin/sh", "args": ["-c", STEAL], "site": "local"}
    job_id = post(client, user.headers, spec)
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"})
    out = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers).text
    err = client.get(f"/api/v1/jobs/{job_id}/logs/stderr", headers=user.headers).text
    assert "PRIVATE KEY" not in out and out == ""
    assert job["state"] == "FAILED" and "No such file or directory" in err, (job, err)


def test_the_probe_decides_and_the_setting_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    config, why = local_sandbox(settings, None)
    assert config is not None and why == ""
    assert str((tmp_path / "data").resolve()) in config.hidden

    off, why = local_sandbox(settings.model_copy(update={"local_isolation": "none"}), None)
    assert off is None and "GRIDGATE_LOCAL_ISOLATION=none" in why

    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap to be found
    missing, why = local_sandbox(settings, None)
    assert missing is None and "bwrap" in why
    with pytest.raises(RuntimeError, match="cannot be sandboxed"):
        local_sandbox(settings.model_copy(update={"local_isolation": "sandbox"}), None)
