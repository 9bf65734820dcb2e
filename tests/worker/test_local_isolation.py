"""Through the gateway: a local job cannot read the gateway's signing key; the sandbox
is probed at startup, and a setting overrides the probe."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from adapters.local.network import SLIRP4NETNS
from adapters.local.sandbox import CONTROL_DIR, hand_over, sandbox_argv
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


def test_a_program_whose_network_failed_never_runs(tmp_path: Path) -> None:
    # Closing the block pipe releases the held program (EOF). After a failed attach it
    # must already be dead: here nothing else kills the sandbox, so without that the
    # program runs, network-less (CI saw the probe's file written after bwrap's kill).
    config, _ = local_sandbox(Settings(data_dir=tmp_path / "data", local_network="outbound"),
                              None)
    assert config is not None
    broken = tmp_path / "slirp4netns"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    config = replace(config, slirp4netns=str(broken))
    workdir = tmp_path / "job"
    (workdir / CONTROL_DIR).mkdir(parents=True)
    hand_over(config, workdir, None)  # the job's account may write there
    outbound = config.outbound()
    assert outbound is not None
    argv = sandbox_argv(config, workdir, ["/bin/sh", "-c", "echo ran > ran"],
                        outbound=outbound)
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, pass_fds=outbound.pass_fds) as proc:
        log = os.open(os.devnull, os.O_WRONLY)
        try:
            with pytest.raises(OSError, match="slirp4netns could not attach"):
                outbound.attach(log)
        finally:
            os.close(log)
        outbound.stop()
        assert proc.wait() != 0
    assert not (workdir / "ran").exists()
