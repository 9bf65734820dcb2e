"""Report speed: committee reports over 1,000,000 jobs on PostgreSQL (prints JSON).

A private PostgreSQL (tests/pg.py) is migrated to head; allocations are granted through
gateway.services.money.allocations, then a year of settled jobs is bulk-loaded in the database
(INSERT ... SELECT generate_series): per job one winning attempt, one usage record and
one lien (settled: a reservation, outside the ledger), and the two ledger legs the bank
writes for its charge; each allocation's running sums are then set from its ledger, as
the bank keeps them (nothing held: every lien is closed). After VACUUM ANALYZE (what
autovacuum does to a loaded table) it times, through gateway.services.money.reports as the API
calls them:

- `allocations`: the allocation report as of now and as of half a year ago;
- `usage_by_site`: usage by site with the rate basis, as of now (issue 13 target for a
  report over 1,000,000 jobs: under 1 s);
- `usage_by_project`, `waits` for information (not targets).

Baselines in the same run: `SELECT count(*)` over the same rows (a plain scan) and the
same aggregate as one hand-written SQL statement. Each figure is the median of --repeat
runs (wall seconds); the machine is shared, so the load average is printed too.

    nice -n 19 .venv/bin/python benchmarks/report_speed.py [--jobs 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.orm import Session  # noqa: E402

from gateway.accounting.rates import Rate  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.db.models import Project, Site, User  # noqa: E402
from gateway.domain.principal import Principal  # noqa: E402
from gateway.repositories.money import rate_cards  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.services.money import allocations, reports  # noqa: E402
from gateway.services.money.allocations import Grant  # noqa: E402
from gateway.services.money.reports import Period  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.pg import start_postgres  # noqa: E402

SITES = {"alpha": 1000, "beta": 1500, "gamma": 2000, "delta": 800}  # milli-SU / core-hour
PROJECTS = 20
USERS = 200
TARGET_SECONDS = 1.0

# Per job g: its creation, run and the arrival of its usage record; its user, project,
# site and that site's rate; cores 2^(g % 8); a walltime of 2 h quoted, 10-60 min used.
_CREATED = "(CAST(:start AS timestamptz) + g * CAST(:step AS interval))"
MACROS = {
    "created": _CREATED,
    "started": f"{_CREATED} + (g % 7200) * interval '1 second'",
    "ended": f"{_CREATED} + (g % 7200 + 600 + g % 3000) * interval '1 second'",
    "received": f"{_CREATED} + (g % 7200 + 660 + g % 3000) * interval '1 second'",
    "user": "(CAST(:users AS text[]))[1 + g % :u]",
    "project": "(CAST(:projects AS int[]))[1 + g % :p]",
    "site": "(CAST(:sites AS text[]))[1 + g % :s]",
    "rate": "(CAST(:rates AS bigint[]))[1 + g % :s]",
}
MACROS["charge"] = f"((1 << (g % 8)) * (600 + g % 3000) * {MACROS['rate']} + 3599) / 3600"
MACROS["quote"] = f"((1 << (g % 8)) * 7200 * {MACROS['rate']}) / 3600"
# One statement per table; :n jobs over the year before :now. Job g belongs to project
# g % P (allocation id a0 + g % P), user g % U, site g % S; waits, runs and cores vary.
LOAD = [
    """INSERT INTO jobs (id, owner_id, project_id, name, spec, state, site_name,
         cancel_requested, created_at, updated_at, started_at, ended_at, winner_attempt_id)
       SELECT 'bench-' || g, {user}, {project}, 'job' || g,
              '{{}}', 'COMPLETED', {site}, false,
              {created}, {created}, NULL, NULL, g
       FROM generate_series(1, :n) g""",
    """INSERT INTO attempts (id, job_id, number, site_name, tag, native_id, state, workdir,
         created_at, submitted_at, started_at, ended_at)
       SELECT g, 'bench-' || g, 1, {site}, 'gw-' || g, g::text, 'COMPLETED',
              '/w', {created}, {created},
              {started},
              {ended}
       FROM generate_series(1, :n) g""",
    """INSERT INTO usage_records (id, site_name, native_id, run, job_id, source, received_at,
         started_at, ended_at, elapsed, cores, nodes, gpus, state, raw, estimated,
         charged_milli, refunded_milli)
       SELECT g, {site}, g::text, 0, 'bench-' || g, 'sacct',
              {received},
              {started},
              {ended},
              600 + g % 3000, 1 << (g % 8), 1, 0, 'COMPLETED', 'bench', false,
              {charge}, 0
       FROM generate_series(1, :n) g""",
    """INSERT INTO liens (id, job_id, allocation_id, site_name, amount_milli, status,
         created_at, closed_at)
       SELECT g, 'bench-' || g, :a0 + g % :p, {site},
              {quote}, 'settled',
              {created},
              {received}
       FROM generate_series(1, :n) g""",
    # The two legs the bank posts per job: its charge (available -> used). The lien is
    # a reservation (the row above), outside the ledger.
    """INSERT INTO ledger_entries (txn, at, allocation_id, account, amount_milli, kind,
         job_id, lien_id, usage_id, reason, actor)
       SELECT 'charge-' || g, {received}, :a0 + g % :p, leg.account,
              leg.sign * ({charge}), 'charge', 'bench-' || g, g, g, 'charge', 'bench'
       FROM generate_series(1, :n) g
       CROSS JOIN (VALUES ('available', -1), ('used', 1)) AS leg(account, sign)""",
    # The running sums, as the bank keeps them in the same transaction as the legs.
    """UPDATE allocations a SET
         awarded_milli = -s.funding, available_milli = s.available, held_milli = s.held,
         used_milli = s.used
       FROM (SELECT allocation_id,
               sum(CASE WHEN account = 'funding' THEN amount_milli ELSE 0 END) AS funding,
               sum(CASE WHEN account = 'available' THEN amount_milli ELSE 0 END) AS available,
               sum(CASE WHEN account = 'held' THEN amount_milli ELSE 0 END) AS held,
               sum(CASE WHEN account = 'used' THEN amount_milli ELSE 0 END) AS used
             FROM ledger_entries GROUP BY allocation_id) s
       WHERE s.allocation_id = a.id""",
]
LOADED = ["jobs", "attempts", "usage_records", "liens", "ledger_entries"]
RAW_ALLOCATIONS = """
    SELECT allocation_id, account, sum(amount_milli) FROM ledger_entries
    WHERE at <= :as_of GROUP BY allocation_id, account
    UNION ALL
    SELECT allocation_id, 'held', sum(amount_milli) FROM liens
    WHERE created_at <= :as_of AND (closed_at IS NULL OR closed_at > :as_of)
    GROUP BY allocation_id"""
RAW_USAGE_BY_SITE = """
    SELECT site_name, count(*), sum(cores * elapsed), sum(charged_milli)
    FROM usage_records WHERE received_at <= :as_of GROUP BY site_name"""


def timed(call: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Median and best wall seconds of `repeat` calls (after one warm-up call)."""
    call()
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        runs.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(runs), 4), "best_s": round(min(runs), 4)}


def setup(runtime: Runtime, now: datetime) -> tuple[Principal, list[int], list[str], int]:
    """Sites, rate cards, users, projects and one allocation per project (services)."""
    with transaction(runtime.sessions) as s:
        for site, rate in SITES.items():
            s.add(Site(name=site, kind="slurm", enabled=True, drained=False, config={},
                       state="up"))
            s.flush()
            rate_cards.ensure_current(s, site, Rate(core_hour_milli=rate)).created_at = (
                now - timedelta(days=400))
        admin = create_local_user(s, "committee", "bench-password-1", ["admin"])
        # People who never log in here: no password to hash.
        users = [str(uuid.uuid4()) for _ in range(USERS)]
        s.add_all(User(id=u, issuer="bench", subject=u, username=f"user{i:03d}", roles=[])
                  for i, u in enumerate(users))
        projects, first_allocation = [], 0
        for i in range(PROJECTS):
            project = Project(name=f"proj{i:02d}", description="bench")
            s.add(project)
            s.flush()
            projects.append(project.id)
            a = allocations.grant(s, Grant(project.name, "*", 10**13, now - timedelta(days=400),
                                           now + timedelta(days=365)),
                                  set(SITES), "committee", "bench award",
                                  now - timedelta(days=400))
            first_allocation = first_allocation or a.id
        principal = Principal(user_id=admin.id, issuer="local", subject=admin.id,
                              username="committee", roles=frozenset({"admin"}))
    return principal, projects, users, first_allocation


def load(session: Session, n: int, now: datetime, projects: list[int], users: list[str],
         first_allocation: int) -> None:
    """The bulk load above, in one transaction."""
    start = now - timedelta(days=366)  # every run ended (and was received) by now
    params = {"n": n, "start": start, "step": timedelta(days=365) / n,
              "users": users, "u": len(users), "projects": projects, "p": len(projects),
              "sites": list(SITES), "s": len(SITES), "rates": list(SITES.values()),
              "a0": first_allocation}
    # A bulk loader's shortcuts: the rows are consistent by construction, so the foreign
    # keys' per-row triggers are skipped for this transaction (the server's superuser),
    # and plain indexes are built once after the load instead of row by row.
    session.execute(text("SET LOCAL session_replication_role = replica"))
    indexes = session.execute(text(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(:tables) "
        "AND indexname NOT IN (SELECT conname FROM pg_constraint)"), {"tables": LOADED}).all()
    for name, _ in indexes:
        session.execute(text(f'DROP INDEX "{name}"'))
    for statement in LOAD:
        session.execute(text(statement.format(**MACROS)), params)
    for _, definition in indexes:
        session.execute(text(definition))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    now = datetime.now(UTC).replace(microsecond=0)
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        pg = start_postgres(base / "pg")
        try:
            db_url = pg.create_database("bench")
            runtime = build_runtime(Settings(data_dir=base / "data", database_url=db_url,
                                             public_url="http://127.0.0.1", run_worker=False))
            principal, projects, users, a0 = setup(runtime, now)
            started = time.perf_counter()
            with transaction(runtime.sessions) as s:
                load(s, args.jobs, now, projects, users, a0)
            load_s = time.perf_counter() - started
            with runtime.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                c.execute(text("VACUUM ANALYZE"))
            result = measure(runtime, principal, now, args.repeat)
            result.update(jobs=args.jobs, load_seconds=round(load_s, 1))
            runtime.close()
        finally:
            pg.stop()
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))


def measure(runtime: Runtime, principal: Principal, now: datetime,
            repeat: int) -> dict[str, Any]:
    """Each report through the service, and its baselines."""
    half_year = now - timedelta(days=182)
    with runtime.sessions() as s:
        rows = {table: s.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                for table in ("jobs", "usage_records", "ledger_entries")}

        def service(call: Callable[[], Any]) -> Callable[[], Any]:
            def run() -> Any:
                found = call()
                s.rollback()  # each report in its own transaction, as a request would
                return found
            return run

        def sql(statement: str, **params: Any) -> Callable[[], Any]:
            return service(lambda: s.execute(text(statement), params).all())

        figures = {
            "allocations": timed(service(lambda: reports.allocation_report(
                s, principal, None, Period(), 30, now)), repeat),
            "allocations_half_a_year_ago": timed(service(lambda: reports.allocation_report(
                s, principal, None, Period(as_of=half_year), 30, now)), repeat),
            "usage_by_site": timed(service(lambda: reports.usage_report(
                s, principal, "site", None, Period(), now)), repeat),
            "usage_by_project": timed(service(lambda: reports.usage_report(
                s, principal, "project", None, Period(), now)), repeat),
            "waits": timed(service(lambda: reports.wait_report(
                s, principal, None, Period(), now)), repeat),
        }
        baselines = {
            "count_ledger_entries": timed(sql("SELECT count(*) FROM ledger_entries"), repeat),
            "count_usage_records": timed(sql("SELECT count(*) FROM usage_records"), repeat),
            "raw_sql_allocations": timed(sql(RAW_ALLOCATIONS, as_of=now), repeat),
            "raw_sql_usage_by_site": timed(sql(RAW_USAGE_BY_SITE, as_of=now), repeat),
        }
        check = reports.usage_report(s, principal, "site", None, Period(), now)
    targets = {name: figures[name]["median_s"] < TARGET_SECONDS
               for name in ("allocations", "usage_by_site")}
    return {
        "rows": rows, "reports": figures, "baselines": baselines,
        "target_seconds": TARGET_SECONDS, "under_target": targets,
        "usage_runs_counted": check["total"]["runs"],
        "baseline_note": "count(*) = a plain scan of the same rows; raw_sql = the same "
                         "GROUP BY hand-written, without access rules or the rate basis",
    }


if __name__ == "__main__":
    main()
