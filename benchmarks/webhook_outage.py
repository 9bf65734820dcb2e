"""A webhook receiver refusing connections for `--outage` seconds while `--jobs` jobs
are made and move through their lives, then back: how long after its return every
event has arrived, and whether each job's arrived in order and none is missing (prints
JSON; exits 1 if not). The run itself is tests/worker/webhook_outage.py; back-off and
poll are the settings' defaults unless given.

    .venv/bin/python benchmarks/webhook_outage.py [--outage 600] [--jobs 200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.worker.webhook_outage import Outage, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, default=600.0, help="seconds")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--backoff", type=float, nargs=2, default=(5.0, 3600.0),
                        metavar=("FIRST", "LONGEST"))
    parser.add_argument("--poll", type=float, default=1.0, help="the worker's poll, s")
    args = parser.parse_args()
    result = run(Outage(args.outage, args.jobs, tuple(args.backoff), args.poll))
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
