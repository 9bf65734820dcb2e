"""A gateway in the test process over the live testbed's site configs, driven through its
REST API, with the worker cycled by hand so a test decides when work happens."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.api.app import create_app
from gateway.auth.accounts import create_local_user
from gateway.auth.ssh_ca import SshCa
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.db.models import User
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from testbed import trusted_ca
from testbed.state import TestbedInfo
from tests.conftest import ALL_SCOPES

FINAL = ("COMPLETED", "FAILED", "CANCELLED")
# Identity modes a live test runs in: the site configs' own (community or mapped
# accounts), and certificates at every site (live_gateway(certificates=True)).
MODES = ("configured", "certificates")


class LiveGateway:
    """One gateway (SQLite, built-in issuer) whose sites are testbed sites."""

    def __init__(self, runtime: Runtime, client: TestClient, *,
                 certificates: bool = False) -> None:
        self.runtime = runtime
        self.client = client
        # Whether every site logs alice and bob in with certificates (live_gateway).
        self.certificates = certificates
        self.worker = Worker(runtime)
        self._owners: dict[str, dict[str, str]] = {}

    def token(self, username: str | None = None) -> dict[str, str]:
        """Headers for the local user `username` (made on first use), or else a new user;
        with certificates, alice (only alice and bob have accounts at the sites)."""
        name = username or ("alice" if self.certificates else
                            f"live{time.monotonic_ns() % 10**9}")
        with transaction(self.runtime.sessions) as session:
            user_id = session.scalar(select(User.id).where(User.username == name))
            if user_id is None:
                user_id = create_local_user(session, name, "correct horse battery").id
        token = issue_access_token(self.runtime.settings, self.runtime.keys, subject=user_id,
                                   client_id="tests", scope=ALL_SCOPES, username=name).token
        return {"Authorization": f"Bearer {token}"}

    def submit(self, headers: dict[str, str], spec: dict[str, Any]) -> str:
        """POST the spec as the user of `headers`; the job's id (later calls read it as
        that user)."""
        r = self.client.post("/api/v1/jobs", headers=headers, json=spec)
        assert r.status_code == 202, r.text
        job_id: str = r.json()["id"]
        self._owners[job_id] = headers
        return job_id

    def owner(self, job_id: str) -> dict[str, str]:
        """The headers of the user who submitted the job."""
        return self._owners[job_id]

    def job(self, job_id: str) -> dict[str, Any]:
        r = self.client.get(f"/api/v1/jobs/{job_id}", headers=self._owners[job_id])
        assert r.status_code == 200, r.text
        job: dict[str, Any] = r.json()
        return job

    def cancel(self, job_id: str) -> None:
        r = self.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=self._owners[job_id])
        assert r.status_code == 202, r.text

    def until(self, job_ids: Sequence[str], done: Callable[[dict[str, Any]], bool],
              deadline: float = 240) -> dict[str, dict[str, Any]]:
        """Cycle the worker until `done` holds for every job; the jobs as the API shows them."""
        end = time.monotonic() + deadline
        while True:
            self.worker.run_once()
            jobs = {i: self.job(i) for i in job_ids}
            if all(done(j) for j in jobs.values()):
                return jobs
            if time.monotonic() > end:
                raise AssertionError(f"jobs not there after {deadline:.0f}s: {jobs}")
            time.sleep(0.5)

    def until_final(self, job_id: str, deadline: float = 240) -> dict[str, Any]:
        """Cycle the worker until the job is final; the job."""
        return self.until([job_id], lambda j: j["state"] in FINAL, deadline)[job_id]

    def output(self, job_id: str, stream: str = "stdout") -> str:
        r = self.client.get(f"/api/v1/jobs/{job_id}/logs/{stream}",
                            headers=self._owners[job_id])
        assert r.status_code == 200, r.text
        text: str = r.text
        return text

    def upload(self, headers: dict[str, str], path: Path, digest: str,
               chunk: int = 32 << 20) -> str:
        """Upload `path` (sha256 `digest`) through the REST API in `chunk`-byte pieces, as
        the user of `headers`; the upload's id."""
        size = path.stat().st_size
        r = self.client.post("/api/v1/uploads", headers=headers,
                             json={"name": path.name, "size": size, "sha256": digest})
        assert r.status_code == 201, r.text
        upload_id: str = r.json()["id"]
        with open(path, "rb") as src:
            for start in range(0, size, chunk):
                data = src.read(chunk)
                r = self.client.put(f"/api/v1/uploads/{upload_id}", content=data, headers={
                    **headers,
                    "Content-Range": f"bytes {start}-{start + len(data) - 1}/{size}"})
                assert r.status_code == 200, r.text
        r = self.client.post(f"/api/v1/uploads/{upload_id}/complete", headers=headers,
                             json={"sha256": digest})
        assert r.status_code == 200, r.text
        return upload_id

    def sites(self) -> dict[str, dict[str, Any]]:
        r = self.client.get("/api/v1/sites", headers=self.token())
        assert r.status_code == 200, r.text
        return {s["name"]: s for s in r.json()["items"]}


# Certificate mode: the testbed's mapped accounts, each the one principal of its user's
# certificates (testbed.sites: gwalice and gwbob on every site).
PRINCIPALS = {"alice": "gwalice", "bob": "gwbob"}


@contextmanager
def live_gateway(testbed: TestbedInfo, sites: Sequence[str], base: Path, *,
                 over_wan: bool = False, certificates: bool = False,
                 status_account: str | None = None,
                 **overrides: Any) -> Iterator[LiveGateway]:
    """A LiveGateway over `sites` of the running testbed (reached over their emulated
    wide-area links if `over_wan`: testbed.wan), with its state under `base` (and any
    further settings in `overrides`). With `certificates`, alice and bob log in to every
    site as their own accounts with certificates the gateway's CA signs, which the
    sites trust for as long as this lasts (testbed.trusted_ca); with `status_account`
    too, that account is asked about everyone's jobs."""
    configs = base / "site-configs"
    configs.mkdir(parents=True)
    source = testbed.site_configs_wan if over_wan else testbed.site_configs
    assert source is not None, "this testbed's subnet has no room for WAN links"
    assert not (certificates and over_wan), "certificates are bound to the LAN's address"
    for name in sites:
        data = yaml.safe_load((Path(source) / f"{name}.yaml").read_text())
        if certificates:
            limits: dict[str, Any] = {"source_addresses": [f"{testbed.bridge_ip}/32"]}
            if status_account is not None:
                limits["status_account"] = status_account
            data["accounts"] = {"mode": "certificate", "principals": PRINCIPALS,
                                "certificate": limits}
        (configs / f"{name}.yaml").write_text(yaml.safe_dump(data))
    settings = Settings(data_dir=base / "data", database_url=f"sqlite:///{base / 'gw.db'}",
                        site_configs_dir=configs, run_worker=False,
                        public_url="http://gateway.test", **overrides)
    runtime = build_runtime(settings)
    if certificates:
        lines = [k.line for k in SshCa(settings.ssh_ca_dir).trusted(runtime.clock())]
        for name in sites:
            trusted_ca.trust(testbed.sites[name], lines)
    try:
        with TestClient(create_app(runtime=runtime)) as client:
            yield LiveGateway(runtime, client, certificates=certificates)
    finally:
        runtime.close()
        if certificates:
            for name in sites:
                trusted_ca.trust(testbed.sites[name], [])
