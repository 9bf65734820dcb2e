"""What starting the CLI loads: the client and the shared schemas, never the server; and
each command only what it uses.

The server commands (`serve`, `worker`, `db upgrade`, `admin ...`, `site check`) import
the gateway's own modules inside themselves; loading them up front would make every
client command pay for SQLAlchemy, paramiko and the services. Commands are loaded on
first use (gateway.cli.lazy), so `gridgate --version` loads neither the client nor httpx,
pydantic or rich. Checked in a fresh interpreter, since this test process has imported
everything already. How long starting takes is measured by benchmarks/cli_startup.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.client.api import GatewayClient
from gateway.client.credentials import CredentialStore, StoredTokenProvider
from tests.client.live import LiveGateway, serve_gateway

SERVER = ("gateway.api", "gateway.services", "gateway.db", "gateway.worker",
          "gateway.repositories", "gateway.runtime", "gateway.settings", "gateway.auth",
          "gateway.siteconfig", "gateway.scheduling", "gateway.serving", "gateway.store",
          "gateway.metrics", "sqlalchemy", "paramiko", "fastapi", "uvicorn", "alembic")
HEAVY = ("httpx", "pydantic", "rich", "yaml", "gateway.client.api", "gateway.schemas")
# What reading jobs (`list`, `show`, and their --help) has no use for, and once paid for
# in start-up: httpx's own command line (click, rich's progress bars, pygments, loaded by
# `import httpx` unless the CLI stops it), the workflows package's models (`submit
# --dependency`), YAML (spec files), the progress bars of transfers.
NOT_FOR_READING = ("click", "rich.progress", "yaml", "workflows",
                   "gateway.cli.jobs.relations", "gateway.cli.files.progress")
# Loaded by typer to draw a command's --help, and by nothing else of `list` or `show`.
HELP_ONLY = ("pygments", "rich.syntax", "rich.markdown", "markdown_it")

# Builds the click command of every client command (what `gridgate CMD` does first).
BUILD = ("import typer.main, gateway.cli.main as m; root = typer.main.get_command(m.app); "
         "[root.get_command(None, name) for name in {names}]")
CLIENT_COMMANDS = ("login", "logout", "submit", "list", "show", "events", "logs", "cancel",
                   "hold", "release", "wait", "watch", "fetch", "outputs-delete", "upload",
                   "uploads", "upload-delete", "estimate", "explain", "sites", "health", "schema",
                   "projects", "balance", "project", "report", "usage", "audit")


def _loaded_by(statement: str, *argv: str) -> set[str]:
    return _run(statement, *argv)[1]


def _run(statement: str, *argv: str, env: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The finished process and the modules it had loaded at exit (a None entry, an
    import refused on purpose, is no module)."""
    code = (f"import sys, json, atexit; atexit.register(lambda: print(json.dumps(sorted("
            f"k for k, v in sys.modules.items() if v is not None)), file=sys.stderr)); "
            f"{statement}")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})
    return done, set(json.loads(done.stderr.strip().splitlines()[-1]))


def _gridgate(*argv: str, env: dict[str, str] | None = None
              ) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`gridgate ARGV` as the console script runs it (gateway.cli.main:main)."""
    return _run("sys.argv[0] = 'gridgate'; from gateway.cli.main import main; main()",
                *argv, env=env)


def _unused(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules of `loaded` that are one of `names` or inside one."""
    return sorted(m for m in loaded if m in names or m.startswith(tuple(n + "." for n in names)))


def _server(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if m.startswith(SERVER))


def test_gridgate_version_loads_no_client_and_no_server_module() -> None:
    loaded = _loaded_by("import sys; sys.argv[0] = 'gridgate'; "
                        "from gateway.cli.main import main; main()", "--version")
    assert "gateway.cli.main" in loaded and "typer" in loaded
    assert _server(loaded) == []
    assert sorted(m for m in loaded if m.startswith(HEAVY)) == []
    assert sorted(m for m in loaded if m.startswith("gateway.cli.")) == [
        "gateway.cli.errors", "gateway.cli.lazy", "gateway.cli.main", "gateway.cli.state"]


def test_a_job_command_loads_the_job_commands_only() -> None:
    loaded = _loaded_by(BUILD.format(names=["list"]))
    assert "gateway.client.api" in loaded and "gateway.schemas.jobs" in loaded
    assert _server(loaded) == []
    assert "gateway.cli.allocations" not in loaded and "gateway.cli.files.outputs" not in loaded


def test_every_client_command_loads_no_server_module() -> None:
    loaded = _loaded_by(BUILD.format(names=list(CLIENT_COMMANDS)))
    assert "gateway.client.api" in loaded and "gateway.schemas.jobs" in loaded
    assert "gateway.cli.audit" in loaded and "gateway.cli.files.uploads" in loaded
    assert _server(loaded) == []


def test_the_shared_schemas_import_neither_server_nor_client() -> None:
    loaded = _loaded_by("import gateway.schemas.jobs, gateway.schemas.sites, "
                        "gateway.schemas.uploads")
    assert sorted(m for m in loaded if m.startswith((*SERVER, "gateway.client",
                                                     "gateway.cli"))) == []


def test_the_image_commands_load_no_client_and_no_server_module() -> None:
    # `gridgate image` works on local files only: no HTTP client (the CLI's error and
    # render modules bring the client's plain types only), no server code.
    loaded = _loaded_by(BUILD.format(names=["image"]))
    assert "gateway.cli.images.commands" in loaded and "containers.image.sif" in loaded
    assert _server(loaded) == []
    assert sorted(m for m in loaded if m.startswith(("gateway.client.api", "httpx"))) == []


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], str]]:
    """(environment of a CLI logged in to a live gateway, the id of a job there)."""
    with serve_gateway(tmp_path_factory.mktemp("gateway"), run_worker=False) as gw:
        config = tmp_path_factory.mktemp("config")
        gw.login(config)
        yield {"GRIDGATE_URL": gw.url, "GRIDGATE_CONFIG_DIR": str(config)}, _job(gw, config)


def _job(gw: LiveGateway, config: Path) -> str:
    store = CredentialStore(config / "credentials.json")
    with GatewayClient(gw.url, StoredTokenProvider(gw.url, store)) as client:
        return client.submit({"name": "imports", "executable": "/bin/true",
                              "site": "local"})["id"]


def test_list_help_loads_nothing_reading_jobs_does_not_need() -> None:
    done, loaded = _gridgate("list", "--help")
    assert done.returncode == 0 and "List your jobs" in done.stdout
    assert _unused(loaded, NOT_FOR_READING) == []
    assert _server(loaded) == []


def test_list_and_show_load_nothing_they_do_not_need(
        reader: tuple[dict[str, str], str]) -> None:
    env, job = reader
    for argv in (["list"], ["show", job[:8]], ["list", "--json"]):
        done, loaded = _gridgate(*argv, env=env)
        assert done.returncode == 0, done.stderr
        assert job[:8] in done.stdout  # the job was read and shown, not an error
        assert "gateway.client.api" in loaded and "rich.table" in loaded
        assert _unused(loaded, NOT_FOR_READING + HELP_ONLY) == [], argv
        assert _server(loaded) == [], argv
