"""Through the gateway: a local job cannot read the gateway's signing key; the sandbox
is probed at startup, and a setting overrides the probe."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from adapters.local.network import SLIRP4NETNS
from gateway.runtime import Runtime
from gateway.services.sites.local_host import local_sandbox
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


def test_an_outbound_network_is_probed_and_never_missing_silently(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(data_dir=tmp_path / "data", local_network="outbound")
    config, why = local_sandbox(settings, None)
    assert config is not None and why == ""
    assert config.network == "outbound" and config.slirp4netns == shutil.which("slirp4netns")
    assert local_sandbox(settings.model_copy(update={"local_network": "none"}), None)[0] == \
        replace(config, network="none", slirp4netns=SLIRP4NETNS)

    # Asked for, an outbound network that cannot be had stops the gateway, saying why.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").symlink_to(str(shutil.which("bwrap")))
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(RuntimeError, match="slirp4netns is not installed"):
        local_sandbox(settings, None)
    broken = bin_dir / "slirp4netns"
    broken.write_text("#!/bin/sh\necho 'open(\"/dev/net/tun\"): Permission denied' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"could not attach .*/dev/net/tun.*: Permission"):
        local_sandbox(settings, None)
