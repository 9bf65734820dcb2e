"""Adapter errors reach API users as problem documents (gateway/api/problems.py).

Sites that fail for real: `faraway` points at a port where nothing listens (a socket
bound but not listening holds it, so connections are refused), and `wrongkey` at a real
sshd (tests/ssh/sshd.py) whose host key the site config does not pin. A job's output is
read through GET /jobs/{id}/logs/stdout, the route that reaches a site while the
request waits.

No route raises a command timeout, an unknown job, a rejected submission or an output
overflow while the request waits (the worker does those), so the last tests mount a
route on the real app that makes the real adapter code raise them.
"""

from __future__ import annotations

import copy
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient

from adapters.batch.adapter import BatchAdapter
from adapters.batch.script import check_text
from adapters.errors import (
    AdapterError,
    CommandTimeout,
    OutputTooLarge,
    SubmitRejected,
    UnknownJob,
)
from adapters.slurm.dialect import SlurmDialect
from adapters.ssh import SshTransport
from adapters.transport import LocalTransport
from gateway.api.app import create_app
from gateway.db.engine import transaction
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from gateway.settings import Settings
from tests.conftest import LOOPBACK, MakeUser
from tests.siteconfig.conftest import GOOD, ed25519_private_openssh, ed25519_public_line
from tests.ssh.sshd import Sshd, start_sshd

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def closed_port() -> Iterator[int]:
    """A local port that refuses connections: bound (so no one else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def other_sshd() -> Iterator[Sshd]:
    """A real sshd; no site config pins its host key, and nobody logs in to it."""
    server = start_sshd("gridgate-nobody", login=False)
    try:
        yield server
    finally:
        server.cleanup()


def _site(name: str, port: int, key_path: Path) -> dict[str, Any]:
    config: dict[str, Any] = copy.deepcopy(GOOD)
    config.update(name=name, scratch_root=f"/scratch/{name}")
    # The pinned key is a fresh one: no server shows it.
    config["ssh"] = {"host": "127.0.0.1", "port": port,
                     "host_keys": [ed25519_public_line()], "connect_timeout_seconds": 5}
    config["accounts"] = {"mode": "community",
                          "community": {"user": "gwcomm", "key": {"path": str(key_path)}}}
    return config


@pytest.fixture
def settings(settings: Settings, tmp_path: Path, closed_port: int,
             other_sshd: Sshd) -> Settings:
    """The test settings, plus the sites `faraway` and `wrongkey`."""
    key = tmp_path / "gwcomm_ed25519"
    key.write_text(ed25519_private_openssh())
    key.chmod(0o600)
    configs = tmp_path / "site-configs"
    configs.mkdir()
    for name, port in (("faraway", closed_port), ("wrongkey", other_sshd.port)):
        (configs / f"{name}.yaml").write_text(yaml.safe_dump(_site(name, port, key)))
    return settings.model_copy(update={"site_configs_dir": configs})


def _job_at(client: TestClient, runtime: Runtime, headers: dict[str, str], site: str) -> str:
    """A job whose (only) attempt runs at `site`, as the worker would have recorded it."""
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": "far", "executable": "/bin/echo", "args": ["hi"], "site": site})
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    tag = uuid.uuid4().hex[:16]
    with transaction(runtime.sessions) as session:
        session.add(Attempt(job_id=job_id, number=1, site_name=site, tag=tag,
                            native_id="4242", state="RUNNING",
                            workdir=f"/scratch/{site}/{tag}"))
    return job_id


def _ssh_transport(runtime: Runtime, site: str) -> SshTransport:
    adapter = runtime.sites.get(site).adapter
    assert isinstance(adapter, BatchAdapter) and isinstance(adapter.transport, SshTransport)
    return adapter.transport


def test_unreachable_site_is_503(client: TestClient, runtime: Runtime,
                                 make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job_at(client, runtime, user.headers, "faraway")
    r = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers)
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["title"] == "Site unavailable"
    assert body["instance"] == f"/api/v1/jobs/{job_id}/logs/stdout"
    assert body["detail"].startswith("cannot connect to faraway (127.0.0.1:")
    assert body["detail"].endswith(". Try again later.")


def test_open_circuit_is_503_with_retry_after(client: TestClient, runtime: Runtime,
                                              make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job_at(client, runtime, user.headers, "faraway")
    breaker = _ssh_transport(runtime, "faraway").breaker
    for _ in range(breaker.threshold):  # as many refused connections as open the circuit
        breaker.record_failure("Connection refused")
    retry_at = breaker.state().retry_at
    assert breaker.is_open and retry_at is not None
    r = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers)
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == PROBLEM
    assert r.json()["title"] == "Site unavailable"
    assert r.json()["detail"].startswith("site faraway unreachable since ")
    # Whole seconds until the breaker lets the next attempt through (cooldown: 15-30 s).
    retry_after = int(r.headers["retry-after"])
    assert 1 <= retry_after <= breaker.cooldown.cap


def test_host_key_mismatch_is_502_naming_the_site(client: TestClient, runtime: Runtime,
                                                  make_user: MakeUser,
                                                  other_sshd: Sshd) -> None:
    user = make_user()
    job_id = _job_at(client, runtime, user.headers, "wrongkey")
    r = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers)
    assert r.status_code == 502, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["title"] == "Site host key mismatch"
    assert body["detail"].startswith(
        f"host key of wrongkey (127.0.0.1:{other_sshd.port}) is not the pinned one: "
        "the server offered ssh-ed25519 SHA256:")
    assert "update its host_keys in the site config" in body["detail"]
    assert "Try again later" not in body["detail"]  # trying again cannot help
    assert "retry-after" not in r.headers


# --- errors no route raises while the request waits -----------------------------------


def _raising_app(runtime: Runtime) -> FastAPI:
    """The real app, plus one route per error, each made by real adapter code."""
    app = create_app(runtime=runtime)

    @app.get("/test/timeout")
    def timeout() -> None:
        LocalTransport(label="testsite").run(["sleep", "60"], timeout=0.05)

    @app.get("/test/unknown-job")
    def unknown_job() -> None:
        SlurmDialect().cancel_command("not-a-job-id")

    @app.get("/test/rejected")
    def rejected() -> None:
        check_text("job name", "a\x00b")

    @app.get("/test/too-much-output")
    def too_much() -> None:
        LocalTransport(label="testsite", max_output_bytes=100).run(
            ["head", "-c", "1000", "/dev/zero"])

    @app.get("/test/invalid-command")
    def invalid() -> None:
        LocalTransport().run([])

    return app


@pytest.fixture
def raising(runtime: Runtime) -> Iterator[TestClient]:
    with TestClient(_raising_app(runtime), client=LOOPBACK, raise_server_exceptions=False) as c:
        yield c


# (route, the error its code raises, status, title, start of the detail)
CASES = [
    ("timeout", CommandTimeout, 504, "Site timed out",
     "`sleep 60` on testsite did not finish in time; its process group was killed."),
    ("unknown-job", UnknownJob, 404, "Job unknown to the site",
     "'not-a-job-id' is not a valid Slurm job id"),
    ("rejected", SubmitRejected, 422, "Rejected by the site's scheduler",
     "job name contains a NUL character."),
    ("too-much-output", OutputTooLarge, 502, "Site error",
     "`head -c 1000 /dev/zero` on testsite wrote more than 100 bytes of output"),
]


@pytest.mark.parametrize(("route", "error", "status", "title", "detail"), CASES,
                         ids=[c[0] for c in CASES])
def test_adapter_error_is_a_problem(raising: TestClient, route: str, error: type[AdapterError],
                                    status: int, title: str, detail: str) -> None:
    r = raising.get(f"/test/{route}")
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert (body["status"], body["title"], body["instance"]) == (status, title, f"/test/{route}")
    assert body["detail"].startswith(detail)
    # Only what trying again may fix says so.
    assert body["detail"].endswith("Try again later.") == error.transient


def test_invalid_command_is_our_bug_an_incident(raising: TestClient) -> None:
    r = raising.get("/test/invalid-command")
    assert r.status_code == 500, r.text
    body = r.json()
    assert body["title"] == "Internal Server Error"
    assert body["detail"] == (f"Something went wrong on our side (incident {body['incident']}); "
                              "it has been logged. Try again, or report the incident id.")

