"""Job mail (`notify` in a job spec) sent by the worker through a real SMTP server
(aiosmtpd) started by the test, for jobs driven through their states on the local site
(SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.mail_models import MailSent
from gateway.db.models import User
from gateway.runtime import Runtime
from gateway.services.mail import outbox
from gateway.services.mail.outbox import MailPass
from gateway.services.mail.relay import Relay
from gateway.settings import Settings
from gateway.worker import loop
from gateway.worker.loop import Worker
from tests.conftest import MakeUser, TestUser
from tests.mail.smtp_server import SmtpServer, free_port
from tests.waiting_jobs import let_jobs_go, waits
from tests.worker.test_worker_local import post, run_until

PY = sys.executable
FINAL = {"COMPLETED", "FAILED", "CANCELLED"}
ADA = "ada@example.org"


@pytest.fixture
def settings(tmp_path: Any, database_url: str, smtp_server: SmtpServer) -> Settings:
    return Settings(data_dir=tmp_path / "data", database_url=database_url, run_worker=False,
                    worker_poll_seconds=0.1, submit_lease_seconds=5,
                    public_url="http://gateway.test", smtp_host=smtp_server.host,
                    smtp_port=smtp_server.port, mail_from="gridgate@hpc.example",
                    mail_domains="lab.example")


def with_email(runtime: Runtime, user: TestUser, address: str | None = ADA) -> TestUser:
    """Give the user the address an identity provider verified (as a login would)."""
    with transaction(runtime.sessions) as session:
        row = session.get(User, user.principal.user_id)
        assert row is not None
        row.email = address
    return user


def quick(name: str, code: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "executable": PY, "args": ["-c", f"raise SystemExit({code})"],
            **extra}


def no_mail_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drive jobs with workers that send no mail (the test sends it itself)."""
    monkeypatch.setattr(loop, "send_mail", lambda ctx: False)


def mail_pass(runtime: Runtime, owner: str, later: timedelta = timedelta(0),
              port: int | None = None) -> MailPass:
    relay = Relay.from_settings(runtime.settings)
    assert relay is not None
    if port is not None:
        relay = dataclasses.replace(relay, port=port)
    return MailPass(lambda: transaction(runtime.sessions), relay, owner, timedelta(seconds=60),
                    lambda: utcnow() + later)


def test_begin_and_end_mails_in_order(client: TestClient, runtime: Runtime,
                                      make_user: MakeUser, smtp_server: SmtpServer) -> None:
    user = with_email(runtime, make_user())
    worker = Worker(runtime)
    job_id = post(client, user.headers, {"name": "relax-7", "executable": "/bin/sh",
                                         "args": ["-c", waits("exit 3")],
                                         "notify": {"mail": ["begin", "end"]}})
    silent = post(client, user.headers, quick("silent"))
    run_until(worker, client, user.headers, job_id, {"RUNNING"})
    worker.run_once()  # the next cycle's mail step reads the change committed
    assert len(smtp_server.recorder.messages) == 1
    begin = smtp_server.recorder.messages[0]
    assert begin["Subject"].startswith(f"gridgate job {job_id} (relax-7) Began, RUNNING, "
                                       "queued time "), begin["Subject"]
    let_jobs_go(runtime, job_id)
    run_until(worker, client, user.headers, job_id, FINAL)
    run_until(worker, client, user.headers, silent, FINAL)
    worker.run_once()
    received = smtp_server.recorder.received
    assert len(received) == 2, smtp_server.recorder.subjects
    end = received[1].message
    assert end["Subject"].startswith(f"gridgate job {job_id} (relax-7) Ended, FAILED, "
                                     "run time "), end["Subject"]
    assert end["Subject"].endswith(", exit code 3")
    for item, kind in zip(received, ["begin", "end"], strict=True):
        assert item.rcpt_tos == [ADA] and item.mail_from == "gridgate@hpc.example"
        msg = item.message
        assert (msg["To"], msg["From"]) == (ADA, "gridgate@hpc.example")
        assert msg["Message-ID"] == f"<job-{job_id}.{kind}@hpc.example>" and msg["Date"]
    text = end.get_content()
    assert "state:      FAILED" in text and "exit code:  3" in text and "site:       local" in text
    assert f"gridgate show {job_id}" in text
    # The job that asked for none got none; nothing more for this one either.
    worker.run_once()
    assert len(smtp_server.recorder.messages) == 2


def test_fail_mails_only_a_failure(client: TestClient, runtime: Runtime, make_user: MakeUser,
                                   smtp_server: SmtpServer) -> None:
    user = with_email(runtime, make_user())
    worker = Worker(runtime)
    ok = post(client, user.headers, quick("fine", 0, notify={"mail": ["fail"]}))
    bad = post(client, user.headers, quick("broken", 7, notify={"mail": ["fail"]}))
    both = post(client, user.headers, quick("both", 5, notify={"mail": ["end", "fail"]}))
    for job_id in (ok, bad, both):
        run_until(worker, client, user.headers, job_id, FINAL)
    worker.run_once()
    subjects = sorted(smtp_server.recorder.subjects)
    # A failure asked as end and fail is one mail, the failure's.
    assert [s.split(" (")[0] for s in subjects] == sorted(
        [f"gridgate job {bad}", f"gridgate job {both}"]), subjects
    assert all(" Failed, FAILED, " in s for s in subjects), subjects
    assert any(s.endswith("exit code 7") for s in subjects)


def test_the_address_must_be_the_users(client: TestClient, runtime: Runtime,
                                       make_user: MakeUser) -> None:
    user = with_email(runtime, make_user())
    r = client.post("/api/v1/jobs", headers=user.headers,
                    json=quick("x", notify={"mail": ["end"], "to": "eve@elsewhere.example"}))
    assert r.status_code == 422, r.text
    problem = r.json()
    assert ADA in problem["detail"] and "@lab.example" in problem["detail"], problem
    assert problem["allowed"] == [ADA]
    for to in ("Ada@Example.org", "anyone@lab.example"):
        r = client.post("/api/v1/jobs", headers=user.headers,
                        json=quick("x", notify={"mail": ["all"], "to": to}))
        assert r.status_code == 202, r.text
        assert r.json()["spec"]["notify"] == {"mail": ["all"], "to": to}
    # Not one address: refused by the spec's own check.
    r = client.post("/api/v1/jobs", headers=user.headers,
                    json=quick("x", notify={"mail": ["end"], "to": f"{ADA}\r\nBcc: e@x.org"}))
    assert r.status_code == 422 and "mail address" in r.text
    nobody = make_user()
    r = client.post("/api/v1/jobs", headers=nobody.headers,
                    json=quick("x", notify={"mail": ["end"]}))
    assert r.status_code == 422 and "no verified mail address" in r.json()["detail"]


def test_a_job_name_adds_no_header(client: TestClient, runtime: Runtime, make_user: MakeUser,
                                   smtp_server: SmtpServer) -> None:
    user = with_email(runtime, make_user())
    worker = Worker(runtime)
    nasty = "evil\r\nBcc: victim@x.example\r\nX-Injected: yes\n\nbody?"
    job_id = post(client, user.headers, quick(nasty, notify={"mail": ["end"]}))
    run_until(worker, client, user.headers, job_id, FINAL)
    worker.run_once()
    [item] = smtp_server.recorder.received
    assert item.rcpt_tos == [ADA]
    msg = item.message
    assert "Bcc" not in msg and "X-Injected" not in msg
    assert msg["Subject"].startswith(
        f"gridgate job {job_id} (evil  Bcc: victim@x.example  X-Injected: yes  body?) Ended")
    assert "victim" not in msg.get_content()


def test_a_crash_between_send_and_record_resends_once(
        client: TestClient, runtime: Runtime, make_user: MakeUser, smtp_server: SmtpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    no_mail_step(monkeypatch)
    user = with_email(runtime, make_user())
    job_id = post(client, user.headers, quick("crashy", notify={"mail": ["end"]}))
    run_until(Worker(runtime), client, user.headers, job_id, FINAL)
    finish = outbox.repo.finish

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("worker died after the relay took the mail")

    monkeypatch.setattr(outbox.repo, "finish", crash)
    with pytest.raises(RuntimeError):
        mail_pass(runtime, "w1").run()
    monkeypatch.setattr(outbox.repo, "finish", finish)
    assert len(smtp_server.recorder.messages) == 1
    # While the dead worker's lease runs, nobody sends it again...
    assert not mail_pass(runtime, "w2").run()
    assert len(smtp_server.recorder.messages) == 1
    # ...after it, once, with the same Message-ID; then never again.
    after = timedelta(seconds=61)
    mail_pass(runtime, "w2", after).run()
    mail_pass(runtime, "w3", after * 3).run()
    mail_pass(runtime, "w1").run()
    first, again = smtp_server.recorder.messages
    assert first["Message-ID"] == again["Message-ID"] == f"<job-{job_id}.end@hpc.example>"
    with transaction(runtime.sessions) as session:
        row = session.scalars(select(MailSent)).one()
        assert (row.sent_at is not None, row.attempts, row.outcome) == (True, 2, None)


def test_two_workers_at_once_send_each_mail_once(
        client: TestClient, runtime: Runtime, make_user: MakeUser, smtp_server: SmtpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    no_mail_step(monkeypatch)
    user = with_email(runtime, make_user())
    worker = Worker(runtime)
    jobs = [post(client, user.headers, quick(f"j{i}", notify={"mail": ["end"]}))
            for i in range(6)]
    for job_id in jobs:
        run_until(worker, client, user.headers, job_id, FINAL)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(owner: str) -> None:
        try:
            start.wait()
            for _ in range(3):
                mail_pass(runtime, owner).run()
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"w{i}",)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ids = sorted(str(m["Message-ID"]) for m in smtp_server.recorder.messages)
    assert ids == sorted(f"<job-{j}.end@hpc.example>" for j in jobs)


def sent_row(runtime: Runtime) -> MailSent:
    with transaction(runtime.sessions) as session:
        row = session.scalars(select(MailSent)).one()
        session.expunge(row)
        return row


def test_a_relay_that_is_down_gets_the_mail_later(
        client: TestClient, runtime: Runtime, make_user: MakeUser, smtp_server: SmtpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    no_mail_step(monkeypatch)
    user = with_email(runtime, make_user())
    job_id = post(client, user.headers, quick("patient", notify={"mail": ["end"]}))
    run_until(Worker(runtime), client, user.headers, job_id, FINAL)
    # Nothing listens on that port: the pass keeps the mail for later, saying why.
    assert not mail_pass(runtime, "w1", port=free_port()).run()
    row = sent_row(runtime)
    assert row.sent_at is None and row.lease_owner is None
    assert row.outcome is not None and row.outcome.startswith("the relay did not take it")
    # Not before its back-off...
    mail_pass(runtime, "w1").run()
    assert smtp_server.recorder.messages == []
    # ...then once, though the cursor passed its event long ago.
    mail_pass(runtime, "w2", outbox.RETRY_FIRST + timedelta(seconds=1)).run()
    mail_pass(runtime, "w2", outbox.RETRY_MAX * 2).run()
    assert [m["Message-ID"] for m in smtp_server.recorder.messages] == [
        f"<job-{job_id}.end@hpc.example>"]
    assert sent_row(runtime).sent_at is not None


def test_a_mail_refused_for_good_is_not_sent_again(
        client: TestClient, runtime: Runtime, make_user: MakeUser, smtp_server: SmtpServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    no_mail_step(monkeypatch)
    smtp_server.recorder.refuse.add(ADA)
    user = with_email(runtime, make_user())
    job_id = post(client, user.headers, quick("bounced", notify={"mail": ["end"]}))
    run_until(Worker(runtime), client, user.headers, job_id, FINAL)
    mail_pass(runtime, "w1").run()
    row = sent_row(runtime)
    assert row.sent_at is not None and row.outcome is not None
    assert "refused" in row.outcome and "no such mailbox" in row.outcome
    smtp_server.recorder.refuse.clear()
    mail_pass(runtime, "w1", outbox.RETRY_MAX * 2).run()
    assert smtp_server.recorder.messages == []


def test_pages_and_late_commits(client: TestClient, runtime: Runtime, make_user: MakeUser,
                                smtp_server: SmtpServer, monkeypatch: pytest.MonkeyPatch
                                ) -> None:
    no_mail_step(monkeypatch)
    monkeypatch.setattr(outbox, "BATCH", 2)
    user = with_email(runtime, make_user())
    worker = Worker(runtime)

    def finished(name: str) -> str:
        job_id = post(client, user.headers, quick(name, notify={"mail": ["end"]}))
        run_until(worker, client, user.headers, job_id, FINAL)
        return job_id

    def drain() -> None:
        for _ in range(10):
            if not mail_pass(runtime, "w1").run():
                return
        raise AssertionError("the mail step never caught up")

    jobs = [finished(f"j{i}") for i in range(3)]
    drain()
    # More mails than a page below the cursor must not hold new ones back.
    jobs.append(finished("j3"))
    drain()
    # A change whose id the cursor already passed (its transaction committed late).
    jobs.append(finished("j4"))
    with transaction(runtime.sessions) as session:
        conn = session.connection()
        outbox.repo.advance_cursor(conn, outbox.repo.last_event_id(conn))
    drain()
    ids = sorted(str(m["Message-ID"]) for m in smtp_server.recorder.messages)
    assert ids == sorted(f"<job-{j}.end@hpc.example>" for j in jobs)
