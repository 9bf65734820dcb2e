"""Fixtures for the authentication tests.

`auth` assembles what the OAuth routes need (settings, database, keys, authenticator)
on each database kind, without the rest of the gateway; `api` wraps it in a FastAPI app
with the OAuth router and one protected route, `/whoami`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from gateway.api import problems
from gateway.api.deps import CurrentPrincipal
from gateway.api.routes import oauth
from gateway.auth.authenticator import Authenticator
from gateway.auth.keys import SigningKeys
from gateway.db.base import utcnow
from gateway.db.engine import make_engine, make_session_factory, transaction
from gateway.db.migrate import upgrade_database
from gateway.settings import ExternalIssuer, Settings
from tests.auth.oidc_fixture import oidc_provider  # noqa: F401  (a fixture)

PUBLIC_URL = "https://gateway.test"


@dataclass
class AuthRuntime:
    """The slice of `gateway.runtime.Runtime` that authentication uses."""

    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    keys: SigningKeys
    authenticator: Authenticator
    clock: Callable[[], datetime] = utcnow

    def unit_of_work(self) -> AbstractContextManager[Session]:
        """As `Runtime.unit_of_work`."""
        return transaction(self.sessions)

    def close(self) -> None:
        """Close the authenticator (its JWKS HTTP client) and the engine."""
        self.authenticator.close()
        self.engine.dispose()


def make_auth_runtime(tmp_path: Path, database_url: str, **overrides: object) -> AuthRuntime:
    settings = Settings(data_dir=tmp_path / "data", database_url=database_url,
                        public_url=PUBLIC_URL, run_worker=False, **overrides)  # type: ignore[arg-type]
    engine = make_engine(settings.resolved_database_url)
    upgrade_database(engine)
    sessions = make_session_factory(engine)
    keys = SigningKeys.load_or_create(settings.resolved_signing_key_path)
    return AuthRuntime(settings, engine, sessions, keys, Authenticator(settings, sessions, keys))


def make_app(rt: AuthRuntime) -> FastAPI:
    app = FastAPI()
    app.state.runtime = rt
    problems.install(app, oauth.router.routes)
    app.include_router(oauth.router)

    @app.get("/whoami")
    def whoami(principal: CurrentPrincipal) -> dict[str, object]:
        return {"user_id": principal.user_id, "username": principal.username,
                "issuer": principal.issuer, "subject": principal.subject,
                "scopes": sorted(principal.scopes), "roles": sorted(principal.roles)}

    return app


@pytest.fixture
def auth(tmp_path: Path, database_url: str) -> Iterator[AuthRuntime]:
    # A long poll interval: two polls in a row are always "too fast" (slow_down).
    rt = make_auth_runtime(tmp_path, database_url, device_poll_interval_seconds=60)
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture
def api(auth: AuthRuntime) -> Iterator[TestClient]:
    with TestClient(make_app(auth), base_url=PUBLIC_URL) as client:
        yield client


def external(issuer: str, jwks_url: str, audience: str = "gridgate",
             default_scopes: list[str] | None = None) -> ExternalIssuer:
    return ExternalIssuer(issuer=issuer, audience=audience, jwks_url=jwks_url,
                          default_scopes=default_scopes or [])
