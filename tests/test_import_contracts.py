"""The import contracts ([tool.importlinter] in pyproject.toml) hold, and each one can break.

tests/run.sh runs `lint-imports` too; these tests show the contracts catch what they name.
"""

from __future__ import annotations

import shutil
import subprocess
import sysconfig
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = str(Path(sysconfig.get_path("scripts")) / "lint-imports")

# One forbidden import per contract: (file, line appended, contract id, import reported).
VIOLATIONS = [
    ("adapters/reasons.py", "import gateway.settings", "pure-packages",
     "adapters.reasons -> gateway.settings"),
    ("rules/text.py", "import adapters.base", "rules", "rules.text -> adapters.base"),
    ("containers/refs.py", "import gateway.settings", "pure-packages",
     "containers.refs -> gateway.settings"),
    ("workflows/limits.py", "import gateway.settings", "pure-packages",
     "workflows.limits -> gateway.settings"),
    ("adapters/local/__init__.py", "import paramiko", "paramiko",
     "adapters.local -> paramiko"),
    ("gateway/metrics.py", "import paramiko", "paramiko", "gateway.metrics -> paramiko"),
    ("gateway/client/errors.py", "import gateway.db.models", "client",
     "gateway.client.errors -> gateway.db.models"),
    ("gateway/api/app.py", "import testbed.state", "testbed",
     "gateway.api.app -> testbed.state"),
    ("gateway/api/app.py", "import gateway.worker.loop", "layers",
     "gateway.api.app -> gateway.worker.loop"),
    ("gateway/auth/accounts.py", "import gateway.services.projects", "layers",
     "gateway.auth.accounts -> gateway.services.projects"),
    ("gateway/metrics.py", "import gateway.services.jobs.queries", "layers",
     "gateway.metrics -> gateway.services.jobs.queries"),
    ("gateway/services/money/bank.py", "import gateway.services.jobs.submission", "services",
     "gateway.services.money.bank -> gateway.services.jobs.submission"),
    ("gateway/scheduling/ranking.py", "import gateway.scheduling.evaluation.simulation",
     "scheduling", "gateway.scheduling.ranking -> gateway.scheduling.evaluation.simulation"),
    ("gateway/cli/jobs/commands.py", "import gateway.services.jobs.submission", "cli",
     "gateway.cli.jobs.commands -> gateway.services.jobs.submission"),
]


def _config() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


def _contracts() -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in _config()["tool"]["importlinter"]["contracts"]}


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LINT_IMPORTS, str(cwd / "pyproject.toml"), "--no-cache"],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_contracts_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in done.stdout


def test_each_contract_breaks_on_the_import_it_forbids(tmp_path: Path) -> None:
    # A copy of the tree with one forbidden import per contract; lint-imports puts its working
    # directory first on sys.path, so it analyses the copy.
    for package in ("gateway", "adapters", "containers", "workflows", "rules", "testbed"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for path, line, _, _ in VIOLATIONS:
        with (tmp_path / path).open("a") as fh:
            fh.write(f"\n{line}\n")
    done = _lint(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    contracts = _contracts()
    for contract_id in contracts:
        assert f"{contracts[contract_id]['name']} BROKEN" in " ".join(done.stdout.split())
    for _, _, _, reported in VIOLATIONS:
        assert reported in done.stdout
    assert {v[2] for v in VIOLATIONS} == set(contracts)


def test_every_pure_package_is_under_the_contract() -> None:
    # Every package packages.find ships besides the gateway is pure (DESIGN.md "Layers"):
    # adding one to packages.find without the contract fails here.
    include = _config()["tool"]["setuptools"]["packages"]["find"]["include"]
    shipped = {pattern.rstrip("*").rstrip(".") for pattern in include}
    pure = shipped - {"gateway"}
    assert {"adapters", "containers", "workflows", "rules"} <= pure
    assert set(_contracts()["pure-packages"]["source_modules"]) == pure
    assert pure | {"gateway", "testbed"} == set(_config()["tool"]["importlinter"]["root_packages"])
    assert set(_contracts()["paramiko"]["source_modules"]) == pure | {"gateway", "testbed"}
