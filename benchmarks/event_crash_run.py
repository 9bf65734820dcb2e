"""Crash safety of event delivery: `--jobs` jobs move through their states on the local
site while the worker and the API process are each killed with SIGKILL `--kills` times
(separately, each restarted at once, triggered by progress), with a webhook and
`--sse-clients` event streams attached. Every consumer's record is checked against the
`events` table: none missing, duplicates under the same id, and after dedup by id each
subject's events in id order (prints JSON; exits 1 if a consumer missed an event or saw
one out of order). The run itself is tests/worker/event_crash.py.

    .venv/bin/python benchmarks/event_crash_run.py [--jobs 500] [--kills 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.worker.event_crash import Run, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--kills", type=int, default=3, help="of the worker, and of the API")
    parser.add_argument("--sse-clients", type=int, default=10)
    parser.add_argument("--postgresql", action="store_true",
                        help="on a PostgreSQL of its own (tests.pg) instead of SQLite")
    parser.add_argument("--webhook-timeout", type=float, default=0.5)
    parser.add_argument("--keep", type=Path, help="run in this directory and keep its logs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gridgate-crash-") as tmp:
        base = args.keep or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        pg = None
        url = None
        if args.postgresql:
            from tests.pg import start_postgres
            pg = start_postgres(base / "pg")
            url = pg.create_database("crash")
        try:
            result = run(Run(args.jobs, args.kills, args.sse_clients, url,
                                 args.webhook_timeout), base)
        finally:
            if pg is not None:
                pg.stop()
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
