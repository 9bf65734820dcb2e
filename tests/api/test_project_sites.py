"""A site that runs only some projects' jobs (site config `accounts.projects`), through the
API: a job of another project named for it is refused with a reason a person can act on,
one charged to a listed project is accepted, and an `auto` job of another project is
accepted for the other site. No site command runs: nothing is submitted here."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from adapters.ssh.pool import TransportPool
from adapters.testing import ReplayTransport
from gateway.api.app import create_app
from gateway.db.engine import transaction
from gateway.db.models import Project
from gateway.repositories.identity import projects
from gateway.runtime import Runtime, build_runtime
from gateway.services.sites.registry import SiteRegistry
from gateway.settings import Settings
from tests.conftest import LOOPBACK, MakeUser

EXAMPLES = Path(__file__).resolve().parents[2] / "site-configs" / "examples"
OPEN, CLOSED = "unm-roadrunner", "climate-only"


@pytest.fixture
def client(settings: Settings, tmp_path: Path) -> Iterator[tuple[Runtime, TestClient]]:
    configs = tmp_path / "site-configs"
    configs.mkdir()
    shutil.copy(EXAMPLES / f"{OPEN}.yaml", configs)
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{OPEN}.yaml").read_text())
    data["name"] = CLOSED
    data["accounts"]["projects"] = ["climate"]
    (configs / f"{CLOSED}.yaml").write_text(yaml.safe_dump(data))
    site_settings = settings.model_copy(update={
        "site_configs_dir": configs, "secrets_dir": tmp_path / "secrets",
        "local_site_enabled": False})
    runtime = build_runtime(site_settings)
    runtime.sites.close()
    transport = ReplayTransport()  # no call expected
    runtime.sites = SiteRegistry.from_settings(
        site_settings, TransportPool(lambda target, breaker, jump: transport))
    runtime.sites.sync(runtime.sessions)
    try:
        with TestClient(create_app(runtime=runtime), client=LOOPBACK) as test_client:
            yield runtime, test_client
        transport.assert_done()
    finally:
        runtime.close()


def _job(**spec: Any) -> dict[str, Any]:
    return {"name": "hello", "executable": "/bin/hostname",
            "resources": {"walltime": 600}, **spec}


def test_only_the_listed_projects_jobs_are_admitted(
        client: tuple[Runtime, TestClient], make_user: MakeUser) -> None:
    runtime, http = client
    member, other = make_user(), make_user()
    with transaction(runtime.sessions) as session:
        climate = Project(name="climate")
        projects.add(session, climate)
        session.flush()
        projects.add_member(session, climate.id, member.principal.user_id, "member")

    refused = http.post("/api/v1/jobs", headers=other.headers, json=_job(site=CLOSED))
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["detail"] == (
        f"Site '{CLOSED}' runs jobs of the projects climate only; name one of them in "
        "'project' if you are a member, or choose another site.")
    assert problem["field"] == "project", problem
    # Charged to a personal project, the member's job is refused too; to climate, accepted.
    assert http.post("/api/v1/jobs", headers=member.headers,
                     json=_job(site=CLOSED)).status_code == 422
    accepted = http.post("/api/v1/jobs", headers=member.headers,
                         json=_job(site=CLOSED, project="climate"))
    assert accepted.status_code == 202, accepted.text

    # An `auto` job of another project is accepted: a routing pass places it elsewhere
    # (its exclusion there: tests/scheduling/test_routing.py).
    assert http.post("/api/v1/jobs", headers=other.headers, json=_job()).status_code == 202
