"""Crash safety of event delivery, shared by benchmarks/event_crash_run.py and
tests/worker/test_event_crash.py: jobs move through their states on the local site
while the worker and the API process are each killed with SIGKILL (separately, each
restarted at once); a webhook and a few SSE clients consume every event. The `events`
table is the truth each consumer's record is checked against.

Kills are triggered by progress (jobs whose final event the webhook receiver got), never
by the clock. The SSE clients start from Last-Event-ID 0 (they see every event of the
run without racing their subscription against the first submission) and stop at a
sentinel: one job submitted once everything else is final and delivered, with the
worker stopped, so its ACCEPTED event is the last of the log.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import standardwebhooks
from sqlalchemy import create_engine, select, text

from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.client import GatewayClient
from gateway.db.engine import transaction
from gateway.db.models import Attempt
from gateway.runtime import build_runtime
from gateway.schemas.events import JOB_STATE_TYPE
from gateway.settings import Settings
from tests.waiting_jobs import GO, let_all_go, let_go
from tests.worker.gateway_process import GatewayProcess, free_port
from tests.worker.webhook_receiver import Receiver, receiver

FINAL = ("COMPLETED", "FAILED", "CANCELLED")
# A stream reconnects with back-off up to 5 s: enough attempts to outlast a restart.
RECONNECTS = 60
# A job that runs until let go (tests/waiting_jobs.py; a slower loop: many wait at once).
JOB = {"executable": "/bin/sh",
       "args": ["-c", f'while [ ! -e "$GRIDGATE_WORKDIR/{GO}" ]; do sleep 0.5; done']}
# How long the end may take to show once every job is final (a failure, not a timing).
DEADLINE_SECONDS = 600.0
# The name of the job submitted last, whose event ends each stream.
SENTINEL = "sentinel"


@dataclass
class Seen:
    """One message a consumer received: the id it carried and the event it described."""

    event_id: int
    subject: str
    to_state: str


@dataclass
class Consumer:
    """What one consumer received, in arrival order, and what went wrong reading it."""

    name: str
    seen: list[Seen] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Truth:
    """The events table's job states: id -> (subject, to_state)."""

    events: dict[int, tuple[str, str]]


def check(consumer: Consumer, truth: Truth) -> dict[str, int]:
    """Received, duplicates (the same id again), missing (in the truth, never received),
    mislabelled (an id whose event is not the one the truth has under that id: a
    duplicate under a new id shows here), and out_of_order (after dedup by id, an event
    arriving after a later one of the same subject)."""
    first: dict[int, Seen] = {}
    mislabelled = 0
    for seen in consumer.seen:
        if truth.events.get(seen.event_id) != (seen.subject, seen.to_state):
            mislabelled += 1
        first.setdefault(seen.event_id, seen)
    last: dict[str, int] = defaultdict(int)
    out_of_order = 0
    for seen in first.values():  # dicts keep insertion (arrival) order
        if seen.event_id < last[seen.subject]:
            out_of_order += 1
        last[seen.subject] = max(last[seen.subject], seen.event_id)
    return {"received": len(consumer.seen), "duplicates": len(consumer.seen) - len(first),
            "missing": len(set(truth.events) - set(first)), "mislabelled": mislabelled,
            "out_of_order": out_of_order, "errors": len(consumer.errors)}


class WebhookConsumer:
    """The receiver's requests, each verified with the Standard Webhooks library as it is
    read (its timestamp is checked against now), turned into Seen."""

    def __init__(self, target: Receiver, secret: str) -> None:
        self.target, self.verifier = target, standardwebhooks.Webhook(secret)
        self.consumer = Consumer("webhook")
        self.read = 0
        self.finished: set[str] = set()  # subjects whose final event arrived

    def unique(self) -> int:
        """Events received, each counted once."""
        return len({seen.event_id for seen in self.consumer.seen})

    def take(self) -> None:
        requests = self.target.requests
        while self.read < len(requests):
            request = requests[self.read]
            self.read += 1
            try:
                self.verifier.verify(request.body, request.headers)
                event = json.loads(request.body)
                if event["id"] != request.headers["webhook-id"]:
                    raise ValueError(f"webhook-id {request.headers['webhook-id']} "
                                     f"carries event {event['id']}")
            except Exception as exc:  # noted, and the message counts as not received
                self.consumer.errors.append(repr(exc))
                continue
            to = event["data"]["to"]
            self.consumer.seen.append(Seen(int(event["id"]), event["subject"], to))
            if to in FINAL:
                self.finished.add(event["subject"])


def stream(client: GatewayClient, consumer: Consumer) -> None:
    """Read the event stream from the beginning until the sentinel job's event (known by
    its name: the stream may carry it before the submit's reply gave the test its id)."""
    try:
        for event in client.stream_events(types=[JOB_STATE_TYPE], last_event_id="0",
                                          reconnects=RECONNECTS):
            consumer.seen.append(Seen(int(event["id"]), event["subject"], event["data"]["to"]))
            if event["data"]["job"]["name"] == SENTINEL:
                return
    except Exception as exc:  # reported in the result; the thread must not raise
        consumer.errors.append(repr(exc))
    finally:
        consumer.done.set()


def wait_until(condition: Callable[[], bool], what: str,
               deadline: float = DEADLINE_SECONDS,
               explain: Callable[[], str] = lambda: "") -> None:
    """Poll `condition` until it holds; fail (not time) after `deadline`, saying what
    `explain` tells of the run's state."""
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise RuntimeError(f"gave up waiting for {what}; {explain()}")
        time.sleep(0.1)


def run_state(streams: list[Consumer], sentinel: list[str], logs: list[Path]) -> str:
    """What each stream got so far, and the ends of the processes' logs: why a wait that
    gave up did (a crash run cannot be repeated exactly)."""
    got = {c.name: {"received": len(c.seen), "last_id": c.seen[-1].event_id if c.seen
                    else None, "done": c.done.is_set(), "errors": c.errors[-3:]}
           for c in streams}
    tails = {log.name: log.read_text(errors="replace")[-2000:] if log.exists() else None
             for log in logs}
    return json.dumps({"sentinel": sentinel, "streams": got, "logs": tails}, indent=1)


@dataclass
class Run:
    """The sizes of one run."""

    jobs: int = 500
    kills: int = 3  # of the worker, and as many of the API
    sse_clients: int = 10
    database_url: str | None = None  # None: SQLite in the data directory
    webhook_timeout: float = 0.5
    deadline: float = DEADLINE_SECONDS  # for each wait of the run


def run(size: Run, base: Path) -> dict[str, Any]:
    """One crash run in `base` (see module); the result as a JSON-able document."""
    started = time.perf_counter()
    port = free_port()
    settings = Settings(data_dir=base / "data", database_url=size.database_url,
                        public_url=f"http://127.0.0.1:{port}", run_worker=False,
                        webhook_allowed_ranges="127.0.0.0/8")
    runtime = build_runtime(settings)
    with transaction(runtime.sessions) as session:
        user_id = create_local_user(session, "crash", "crash-password-1").id
    token = issue_access_token(settings, runtime.keys, subject=user_id, client_id="crash",
                               scope="jobs:read jobs:write", username="crash").token
    database_url = settings.resolved_database_url
    runtime.close()
    env = {"GRIDGATE_DATA_DIR": str(settings.data_dir),
           "GRIDGATE_DATABASE_URL": database_url,
           "GRIDGATE_PUBLIC_URL": settings.public_url,
           "GRIDGATE_WEBHOOK_ALLOWED_RANGES": settings.webhook_allowed_ranges,
           "GRIDGATE_WORKER_POLL_SECONDS": "0.2", "GRIDGATE_SUBMIT_LEASE_SECONDS": "3",
           # A delivery leased by a killed worker goes out again once its lease runs
           # out (renewed every third of it while a live worker sends): kept short.
           "GRIDGATE_WEBHOOK_TIMEOUT_SECONDS": str(size.webhook_timeout),
           "GRIDGATE_WEBHOOK_LEASE_SECONDS": "3",
           # A receiver slower than that is tried again soon (same webhook-id).
           "GRIDGATE_WEBHOOK_BACKOFF_SECONDS": "[0.5, 2]",
           # Room for more than a wave waiting at once: the next wave's jobs start.
           "GRIDGATE_LOCAL_SITE_MAX_JOBS": str(max(8, min(size.jobs, 100)))}
    # Every stream is one user's (8 at most by default); room for a reconnect that
    # comes before the server noticed its stream's end.
    streams_env = {"GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": str(2 * size.sse_clients + 8)}
    api = GatewayProcess({**env, **streams_env, "GRIDGATE_PORT": str(port),
                          "GRIDGATE_RUN_WORKER": "false"},
                         base / "api.log", args=("--log-level", "warning"))
    worker = GatewayProcess(env, base / "worker.log", worker_only=True)
    sentinel: list[str] = []
    threads: list[threading.Thread] = []
    clients: list[GatewayClient] = []
    kills: list[dict[str, Any]] = []
    with receiver() as target:
        api.start()
        try:
            headers = {"Authorization": f"Bearer {token}"}
            made = httpx.post(f"{api.url}/api/v1/webhooks", headers=headers,
                              json={"url": target.url, "types": [JOB_STATE_TYPE]},
                              timeout=30)
            made.raise_for_status()
            hook = WebhookConsumer(target, made.json()["secret"])
            streams = [Consumer(f"sse-{i}") for i in range(size.sse_clients)]
            for consumer in streams:
                client = GatewayClient(api.url, lambda: token)
                clients.append(client)
                threads.append(threading.Thread(target=stream, args=(client, consumer),
                                                daemon=True))
                threads[-1].start()
            with GatewayClient(api.url, lambda: token) as client:
                job_ids = [client.submit({"name": f"crash-{i}", **JOB})["id"]
                           for i in range(size.jobs)]
            worker.start()
            moving_at = time.perf_counter() - started
            gate = Gate(database_url, job_ids, 2 * size.kills + 1)
            kill_on_progress(size, hook, gate, (worker, api), kills, started)
            gate.release(2 * size.kills)

            def settled() -> bool:
                gate.let_go()
                return _settled(database_url, size.jobs)

            def explain() -> str:
                return run_state(streams, sentinel, [base / "api.log", base / "worker.log"])

            wait_until(settled, "every job final and every delivery made", size.deadline,
                       explain)
            hook.take()
            settled_at = time.perf_counter() - started
            worker.stop()
            with GatewayClient(api.url, lambda: token) as client:
                sentinel.append(client.submit({"name": SENTINEL,
                                               "executable": "/bin/true"})["id"])
            wait_until(lambda: all(c.done.is_set() for c in streams),
                       "every stream to reach the sentinel", size.deadline, explain)
        finally:
            worker.stop()
            api.stop()
            let_all_go(settings.jobs_dir)  # none left waiting if the run failed
            for client in clients:
                client.close()
    for thread in threads:
        thread.join(timeout=30)
    truth = _truth(database_url, sentinel)
    for consumer in streams:  # the sentinel only ended the streams: not counted
        consumer.seen = [s for s in consumer.seen if s.subject not in sentinel]
    results = {c.name: check(c, truth) for c in [hook.consumer, *streams]}
    errors = {c.name: c.errors[:3] for c in [hook.consumer, *streams] if c.errors}
    return {"jobs": size.jobs, "events": len(truth.events),
            "database": database_url.split(":", 1)[0].split("+")[0],
            "sse_clients": size.sse_clients, "worker_started_at_seconds": round(moving_at, 1),
            "kills": kills, "consumers": results,
            "errors": errors, "settled_at_seconds": round(settled_at, 1),
            "wall_seconds": round(time.perf_counter() - started, 1),
            "ok": all(r["missing"] == r["out_of_order"] == r["mislabelled"] == 0
                      for r in results.values())}


class Gate:
    """Jobs wait (RUNNING) until let go in waves: a job goes on once its wave is
    released and its directory exists (each wait re-checks both)."""

    def __init__(self, database_url: str, job_ids: list[str], waves: int) -> None:
        self.database_url = database_url
        self.waves = [job_ids[len(job_ids) * w // waves:len(job_ids) * (w + 1) // waves]
                      for w in range(waves)]
        self.released: list[str] = []
        self.gone: set[str] = set()  # workdirs let go

    def release(self, wave: int) -> list[str]:
        self.released += self.waves[wave]
        return self.waves[wave]

    def final(self) -> set[str]:
        """The jobs whose final event is committed."""
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                return {str(job) for job in conn.execute(text(
                    "SELECT job_id FROM events WHERE to_state IN "
                    "('COMPLETED', 'FAILED', 'CANCELLED')")).scalars()}
        finally:
            engine.dispose()

    def let_go(self) -> None:
        if len(self.gone) == len(self.released):
            return
        engine = create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                workdirs = conn.execute(select(Attempt.workdir).where(
                    Attempt.job_id.in_(self.released))).scalars().all()
        finally:
            engine.dispose()
        for workdir in workdirs:
            if workdir and workdir not in self.gone and let_go(workdir):
                self.gone.add(workdir)


def kill_on_progress(size: Run, hook: WebhookConsumer, gate: Gate,
                     processes: tuple[GatewayProcess, GatewayProcess],
                     kills: list[dict[str, Any]], started: float) -> None:
    """Kill the worker, then the API, then the worker... (`size.kills` each), each
    restarted at once (never both down). Before the i-th kill the i-th wave of jobs is
    let go, and the kill comes once half of them are final (in the events table, not at
    a consumer: a killed worker's leased deliveries hold those jobs' webhooks back for
    the lease, and the next kill need not wait for that): the other half, and the
    waves still held, move on around the kill."""
    for index in range(2 * size.kills):
        wave = set(gate.release(index))

        def reached(wave: set[str] = wave) -> bool:
            gate.let_go()
            hook.take()  # verified while fresh (the signature's timestamp)
            return 2 * len(wave & gate.final()) >= len(wave)

        wait_until(reached, f"half of wave {index} final", size.deadline)
        process = processes[index % 2]
        process.kill9()
        kills.append({"process": "worker" if index % 2 == 0 else "api",
                      "events_delivered": hook.unique(),
                      "jobs_final_at_receiver": len(hook.finished),
                      "at_seconds": round(time.perf_counter() - started, 1)})
        process.start()


def _settled(database_url: str, jobs: int) -> bool:
    """Every job final and every event delivered to the webhook."""
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            final = conn.execute(text("SELECT count(*) FROM jobs WHERE state IN "
                                      "('COMPLETED', 'FAILED', 'CANCELLED')")).scalar_one()
            events = conn.execute(text("SELECT count(*) FROM events WHERE type = :state"),
                                  {"state": JOB_STATE_TYPE}).scalar_one()
            delivered = conn.execute(text("SELECT count(*) FROM webhook_deliveries "
                                          "WHERE state = 'delivered'")).scalar_one()
    finally:
        engine.dispose()
    return bool(final == jobs and delivered == events)


def _truth(database_url: str, sentinel: list[str]) -> Truth:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, job_id, to_state FROM events WHERE type = "
                                     ":state ORDER BY id"), {"state": JOB_STATE_TYPE})
            return Truth({int(i): (str(job), str(to)) for i, job, to in rows
                          if job not in sentinel})
    finally:
        engine.dispose()
