"""What the audit log costs a submission on PostgreSQL (prints JSON; not a test).

Submits jobs through the service (`gateway.services.jobs.submission.submit`, one unit of work each,
the worker paused) from 1 and 8 threads, with the bank off and on, each with the audit
log and with its appends turned off (the baseline, measured in the same run and
interleaved with it, so drift hits both). A submission appends one entry (its first
event, carrying its lien when the bank is on), inserted with no lock that another commit
takes.

    .venv/bin/python benchmarks/audit_append.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.db.base import utcnow  # noqa: E402
from gateway.domain.jobspec import JobSpec  # noqa: E402
from gateway.domain.principal import Principal  # noqa: E402
from gateway.repositories.money import audit  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.services.jobs.submission import submit  # noqa: E402
from gateway.services.money import allocations  # noqa: E402
from gateway.services.money.allocations import Grant  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.pg import start_postgres  # noqa: E402

SPEC = JobSpec.model_validate({"name": "bench", "executable": "/bin/true", "site": "local"})
TARGET_RATIO_MIN = 0.8


def rate(runtime: Runtime, principal: Principal, threads: int, seconds: float,
         charged: bool) -> float:
    """Submissions per second from `threads` threads for `seconds`."""
    counts = [0] * threads
    end = time.monotonic() + seconds

    def loop(i: int) -> None:
        while time.monotonic() < end:
            with runtime.unit_of_work() as session:
                submit(session, runtime.sites, principal, SPEC, charged=charged)
            counts[i] += 1

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    real_append = audit.append

    def no_audit(*_args: Any, **_kwargs: Any) -> None:
        return None

    with tempfile.TemporaryDirectory() as tmp:
        server = start_postgres(Path(tmp) / "pg")
        try:
            settings = Settings(data_dir=Path(tmp) / "data", run_worker=False,
                                database_url=server.admin_url, public_url="http://bench")
            runtime = build_runtime(settings)
            now = utcnow()
            with runtime.unit_of_work() as s:
                user = create_local_user(s, "bench", "correct horse battery")
                principal = Principal(user.id, user.issuer, user.subject, "bench",
                                      frozenset({"jobs:write"}), frozenset(user.roles),
                                      "bench")
                allocations.grant(s, Grant("~bench", "*", 10**15, now - timedelta(days=1),
                                           now + timedelta(days=365)), {"local"}, "bench",
                                  "benchmark award", now)
            results: dict[str, Any] = {}
            for charged in (False, True):
                for threads in (1, 8):
                    runs: dict[str, list[float]] = {"audit": [], "no_audit": []}
                    for _ in range(args.rounds):
                        for mode in ("audit", "no_audit"):
                            audit.append = real_append if mode == "audit" else no_audit  # type: ignore[assignment]
                            runs[mode].append(rate(runtime, principal, threads, args.seconds,
                                                   charged))
                    audit.append = real_append  # type: ignore[assignment]
                    on, off = (statistics.median(runs[m]) for m in ("audit", "no_audit"))
                    results[f"{'bank' if charged else 'no_bank'}_{threads}_threads"] = {
                        "submit_per_s_audit": round(on, 1),
                        "submit_per_s_no_audit": round(off, 1),
                        "ratio": round(on / off, 3),
                        "audit_ms_per_submit": round(1000 / on - 1000 / off, 3)}
            runtime.close()
        finally:
            server.stop()
    print(json.dumps({"benchmark": "audit_append", "seconds": args.seconds,
                      "rounds": args.rounds, "results": results,
                      "target": {"ratio_min": TARGET_RATIO_MIN}}, indent=2))


if __name__ == "__main__":
    main()
