"""`gridgate serve` with the audit log's writes dropped: the baseline of
benchmarks/audit_scaling.py, the same build with the log off (never a way to run a
gateway). Used as `python -m benchmarks.serve_without_audit serve ...`."""

from __future__ import annotations

import sys
from typing import Any

from gateway.cli.main import main
from gateway.repositories.money import audit


def _dropped(*_args: Any) -> None:
    return None


if __name__ == "__main__":
    audit.write = _dropped  # type: ignore[assignment]  # read by the commit hook at each call
    sys.argv[0] = "gridgate"
    main()
