"""What starting the CLI loads: the client and the shared schemas, never the server.

The server commands (`serve`, `worker`, `db upgrade`, `admin ...`, `site check`) import
the gateway's own modules inside themselves; loading them up front would make every
client command pay for SQLAlchemy, paramiko and the services. Checked in a fresh
interpreter, since this test process has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

SERVER = ("gateway.api", "gateway.services", "gateway.db", "gateway.worker",
          "gateway.repositories", "gateway.runtime", "gateway.settings", "gateway.auth",
          "gateway.siteconfig", "sqlalchemy", "paramiko", "fastapi")


def _loaded_by(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return set(json.loads(out))


def test_starting_the_cli_loads_no_server_module() -> None:
    loaded = _loaded_by("import gateway.cli.main")
    assert "gateway.client.api" in loaded and "gateway.schemas.jobs" in loaded
    assert sorted(m for m in loaded if m.startswith(SERVER)) == []


def test_the_shared_schemas_import_neither_server_nor_client() -> None:
    loaded = _loaded_by("import gateway.schemas.jobs, gateway.schemas.sites, "
                        "gateway.schemas.uploads")
    assert sorted(m for m in loaded if m.startswith((*SERVER, "gateway.client",
                                                     "gateway.cli"))) == []
