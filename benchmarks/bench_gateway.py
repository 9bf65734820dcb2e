"""What API benchmarks act on: a local researcher with an access token, and a gateway
served by a child process on a PostgreSQL of its own, the worker paused."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings
from tests.pg import start_postgres
from tests.worker.gateway_process import GatewayProcess, free_port


def researcher_token(runtime: Runtime, name: str = "bench") -> tuple[str, str]:
    """A new local researcher `name` and an access token for it: (user id, token)."""
    with transaction(runtime.sessions) as session:
        user_id = create_local_user(session, name, "bench-password-1").id
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="bench", scope="jobs:read jobs:write",
                               username=name).token
    return user_id, token


@dataclass(frozen=True)
class BenchGateway:
    """A running gateway, the database it serves and a researcher's token for it."""

    process: GatewayProcess
    runtime: Runtime  # on the same database, for what the benchmark checks itself
    db_url: str
    token: str


@contextlib.contextmanager
def postgres_gateway(env: Mapping[str, str] | None = None,
                     args: tuple[str, ...] = ()) -> Iterator[BenchGateway]:
    """`gridgate serve` (worker paused, warnings logged) on a fresh PostgreSQL, with
    `env` added to its environment and `args` to its command line; all gone on exit."""
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        pg = start_postgres(base / "pg")
        gateway = runtime = None
        try:
            db_url = pg.create_database("bench")
            settings = Settings(data_dir=base / "data", database_url=db_url,
                                public_url="http://127.0.0.1", run_worker=False)
            runtime = build_runtime(settings)
            _, token = researcher_token(runtime)
            gateway = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir), "GRIDGATE_DATABASE_URL": db_url,
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(free_port()),
                "GRIDGATE_RUN_WORKER": "false", **(env or {})}, base / "gateway.log",
                args=("--log-level", "warning", *args))
            gateway.start()
            yield BenchGateway(gateway, runtime, db_url, token)
        finally:
            if gateway is not None:
                gateway.stop()
            if runtime is not None:
                runtime.close()
            pg.stop()
