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
import subprocess
import sys

SERVER = ("gateway.api", "gateway.services", "gateway.db", "gateway.worker",
          "gateway.repositories", "gateway.runtime", "gateway.settings", "gateway.auth",
          "gateway.siteconfig", "gateway.scheduling", "gateway.serving", "gateway.store",
          "gateway.metrics", "sqlalchemy", "paramiko", "fastapi", "uvicorn", "alembic")
HEAVY = ("httpx", "pydantic", "rich", "yaml", "gateway.client.api", "gateway.schemas")

# Builds the click command of every client command (what `gridgate CMD` does first).
BUILD = ("import typer.main, gateway.cli.main as m; root = typer.main.get_command(m.app); "
         "[root.get_command(None, name) for name in {names}]")
CLIENT_COMMANDS = ("login", "logout", "submit", "list", "show", "events", "logs", "cancel",
                   "hold", "release", "wait", "fetch", "outputs-delete", "upload", "uploads",
                   "upload-delete", "estimate", "explain", "sites", "health", "schema",
                   "projects", "balance", "project", "report", "usage", "audit")


def _loaded_by(statement: str, *argv: str) -> set[str]:
    code = (f"import sys, json, atexit; atexit.register(lambda: print(json.dumps("
            f"sorted(sys.modules)), file=sys.stderr)); {statement}")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


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
