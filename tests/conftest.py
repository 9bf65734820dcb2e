"""Shared fixtures: every database-facing test runs on SQLite and on a real PostgreSQL.

PostgreSQL is started once per session by tests/pg.py (or taken from
GRIDGATE_TEST_PG_URL, an admin URL of a server the caller runs).
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from gateway.api.app import create_app
from gateway.auth import accounts
from gateway.auth.accounts import create_local_user
from gateway.auth.keys import SigningKeys
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import make_engine, transaction
from gateway.db.migrate import upgrade_database
from gateway.domain.principal import Principal
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings

# The live multi-site testbed (`testbed` session fixture): tests/testbed/fixture.py.
pytest_plugins = ["tests.testbed.fixture", "tests.registry.fixture"]

ALL_SCOPES = "jobs:read jobs:write sites:read"
# Test clients connect as a local client would (TestClient's default peer is not an IP).
LOOPBACK = ("127.0.0.1", 50000)


# First: xdist's own hook (in each worker) reads the markers to name each test's group;
# run after it, as this hook once did, it found none and every test was scheduled alone.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group tests for xdist's `--dist loadgroup` (tests/run.sh runs several workers).

    Every test that uses a live testbed goes to one worker: they share the session testbed
    (or bring up their own, `uses_testbed`), so it is brought up once, not in each worker.
    Every other test goes to whichever worker is free. Measured on 2 cores: keeping each
    module to one worker as well cost more in balance than its module fixtures saved
    (1,733 s of pytest, two workers at 1,701 s and 1,690 s); with the testbed's group
    alone and a third worker beside the one that mostly waits on the testbed, 1,535 s
    with more tests (workers at 1,501, 1,473 and 1,473 s).
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if "testbed" in getattr(item, "fixturenames", ()) or item.get_closest_marker(
                "uses_testbed"):
            item.add_marker(pytest.mark.xdist_group("testbed"))
            item.user_properties.append(("xdist_group", "testbed"))  # reaches the controller


# Seconds each xdist worker spent in tests, and in the testbed's (collected in the
# controller, printed at the end): which worker sets the suite's time, measured.
_WORKER_SECONDS: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    worker = getattr(report, "node", None)  # set in the xdist controller only
    if worker is None:
        return
    spent = _WORKER_SECONDS.setdefault(worker.gateway.id, [0.0, 0.0])
    spent[0] += report.duration
    if dict(report.user_properties).get("xdist_group") == "testbed":
        spent[1] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for worker, (total, testbed) in sorted(_WORKER_SECONDS.items()):
        terminalreporter.write_line(f"worker {worker}: {total:.0f} s in tests, "
                                    f"{testbed:.0f} s of them on the live testbed")


class _PgDatabases:
    """Creates and drops throwaway databases on one server."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")

    def create(self, template: str | None = None) -> str:
        """A new database (a copy of database `template` when given)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        copy = f' TEMPLATE "{template}"' if template else ""
        with self._engine.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def drop(self, url: str) -> None:
        name = make_url(url).database
        with self._engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def close(self) -> None:
        """Close the pooled admin connection (left open, psycopg warns at exit)."""
        self._engine.dispose()


@pytest.fixture(scope="session")
def pg_databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_PgDatabases]:
    url = os.environ.get("GRIDGATE_TEST_PG_URL")
    if url:
        databases = _PgDatabases(url)
        yield databases
        databases.close()
        return
    from tests.pg import start_postgres

    server = start_postgres(tmp_path_factory.mktemp("pg"))
    try:
        databases = _PgDatabases(server.admin_url)
        yield databases
        databases.close()
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_kind(request: pytest.FixtureRequest) -> str:
    """Which database a test runs on: every database-facing test runs on both."""
    return str(request.param)


@pytest.fixture
def empty_database_url(database_kind: str, tmp_path: Path, request: pytest.FixtureRequest
                       ) -> Iterator[str]:
    """A fresh, empty database of each kind (for the tests of the migrations)."""
    if database_kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'gridgate.db'}"
        return
    yield from _pg_database(request, template=None)


@pytest.fixture
def database_url(database_kind: str, tmp_path: Path, request: pytest.FixtureRequest
                 ) -> Iterator[str]:
    """A fresh database of each kind with the schema at head: a copy of one migrated
    once per session (migrating each test's own took a third of the suite's setup)."""
    if database_kind == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        shutil.copyfile(template, tmp_path / "gridgate.db")
        yield f"sqlite:///{tmp_path / 'gridgate.db'}"
        return
    yield from _pg_database(request, template=request.getfixturevalue("pg_template"))


def _pg_database(request: pytest.FixtureRequest, template: str | None) -> Iterator[str]:
    databases: _PgDatabases = request.getfixturevalue("pg_databases")
    url = databases.create(template)
    try:
        yield url
    finally:
        databases.drop(url)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated to head, copied by `database_url`."""
    path = tmp_path_factory.mktemp("schema") / "gridgate.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    engine.dispose()  # the last connection's close checkpoints the WAL into the file
    return path


@pytest.fixture(scope="session")
def pg_template(pg_databases: _PgDatabases) -> Iterator[str]:
    """A PostgreSQL database migrated to head, the template of `database_url`'s."""
    url = pg_databases.create(None)
    engine = make_engine(url)
    upgrade_database(engine)
    engine.dispose()  # CREATE DATABASE ... TEMPLATE refuses a template in use
    yield str(make_url(url).database)
    pg_databases.drop(url)  # on a server the caller runs (GRIDGATE_TEST_PG_URL) too


@pytest.fixture(scope="session")
def signing_key_pem(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """One signing key per session, made as the gateway makes its own."""
    path = tmp_path_factory.mktemp("key") / "signing-key.pem"
    SigningKeys.load_or_create(path)
    return path.read_bytes()


@pytest.fixture(scope="session", autouse=True)
def _each_secret_hashed_once() -> Iterator[None]:
    """Hash each distinct password or client secret once per session: a real argon2id
    hash with the gateway's parameters (~0.13 s each), shared by the accounts given the
    same secret, as the tests' users mostly are. Verifying still costs its full price."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accounts, "hash_secret", functools.cache(accounts.hash_secret))
        yield


@pytest.fixture
def settings(tmp_path: Path, database_url: str, signing_key_pem: bytes) -> Settings:
    # The session's key, in place before the runtime would make one (~0.1 s each).
    (tmp_path / "data").mkdir(mode=0o700)
    fd = os.open(tmp_path / "data" / "signing-key.pem", os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "wb") as key:
        key.write(signing_key_pem)
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        run_worker=False,
        worker_poll_seconds=0.1,
        submit_lease_seconds=5,
        public_url="http://gateway.test",
        # Tests replaying a site's commands expect each one; a queue asked for by the
        # wall clock would not be (tests/worker/test_predicted_starts.py drives it).
        prediction_refresh_seconds=86400,
    )


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = build_runtime(settings)
    try:
        yield rt
    finally:
        rt.close()


@dataclass(frozen=True)
class TestUser:
    # A helper, not a test class: pytest would try to collect it where it is imported.
    __test__ = False

    principal: Principal
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


MakeUser = Callable[..., TestUser]


@pytest.fixture
def make_user(runtime: Runtime) -> MakeUser:
    """Create a local user and a signed access token for it."""

    def make(username: str | None = None, roles: tuple[str, ...] = ("researcher",),
             scope: str = ALL_SCOPES) -> TestUser:
        name = username or f"u{uuid.uuid4().hex[:8]}"
        with transaction(runtime.sessions) as session:
            user = create_local_user(session, name, "correct horse battery", roles)
            user_id = user.id
        token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                                   client_id="tests", scope=scope, username=name).token
        return TestUser(runtime.authenticator.authenticate(token), token)

    return make


@pytest.fixture
def client(runtime: Runtime) -> Iterator[TestClient]:
    """The app in-process (no worker thread: tests drive the worker themselves)."""
    with TestClient(create_app(runtime=runtime), client=LOOPBACK) as c:
        yield c
