"""`gridgate audit` against a real gateway: one job's story (table and --json), and
`verify`, refused to a researcher and run by an auditor, naming a forged grant."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from sqlalchemy import text

from gateway.cli import errors
from gateway.db.engine import transaction
from gateway.worker.periodic.audit_sequencer import take_in
from tests.cli.helpers import Cli
from tests.cli.test_cli_allocations import person
from tests.client.live import LiveGateway


def _login_as_auditor(cli: Cli, config: Path) -> Cli:
    auditor = Cli(cli.gateway, config)
    name = f"aud{uuid.uuid4().hex[:8]}"
    auditor("admin", "user", "add", name, "--role", "auditor", "--password-stdin",
            input="correct horse battery\n")
    created = json.loads(auditor("admin", "client", "create", f"{name}-cli", "--user", name,
                                 "--json").stdout)
    secret = config.parent / f"{name}.secret"
    secret.write_text(created["client_secret"] + "\n")
    auditor("login", "--client-id", created["client_id"], "--client-secret-file", str(secret))
    return auditor


def test_audit_job_tells_the_story(cli: Cli) -> None:
    result = cli("submit", "--name", "storied", "--exe", "sh", "--wait", "--", "-c", "true")
    job_id = result.stdout.split()[2]
    story = cli.json("audit", "job", job_id)
    assert story["job_id"] == job_id and story["name"] == "storied"
    assert story["attempts"][0]["site"] == "local"
    assert [link["kind"] for link in story["audit"]].count("job.state") == len(story["events"])
    table = cli("audit", "job", job_id).stdout
    assert f"Job {job_id} (storied)" in table
    assert "state COMPLETED" in table and "attempt 1 at local" in table
    cli("audit", "job", str(uuid.uuid4()), code=errors.NOT_FOUND)
    # Every entry proven by the CLI itself against the signed head; an entry edited after
    # it entered the tree fails its proof, and the command fails.
    take_in(cli.gateway.runtime, every=0)
    entries = {e["id"] for e in cli.json("audit", "job", job_id)["audit"]}
    proven = cli("audit", "job", job_id).stdout
    assert (f"Audit log: {len(entries)} entries about this job; {len(entries)} proven, "
            "here,") in proven
    first = min(entries)
    with transaction(cli.gateway.runtime.sessions) as s:
        s.execute(text("UPDATE audit_events SET actor = 'mallory' WHERE id = :id"),
                  {"id": first})
    try:
        failed = cli("audit", "job", job_id, code=errors.FAILURE).stdout
        assert f"PROOF FAILS: entry {first} (job.state) is not proven" in failed
    finally:
        with transaction(cli.gateway.runtime.sessions) as s:
            s.execute(text("UPDATE audit_events SET actor = :a WHERE id = :id"),
                      {"a": story["audit"][0]["actor"], "id": first})
    cli("audit", "job", job_id)


def test_audit_verify_is_for_auditors(cli: Cli, tmp_path: Path) -> None:
    cli("submit", "-q", "--exe", "sh", "--wait", "--", "-c", "true")
    refused = cli("audit", "verify", code=errors.PROBLEM)
    assert "auditor" in refused.stderr
    auditor = _login_as_auditor(cli, tmp_path / "auditor")
    take_in(cli.gateway.runtime, every=0)
    report = auditor.json("audit", "verify")
    assert report["ok"] and report["broken"] is None and report["events"] > 0
    out = auditor("audit", "verify").stdout
    assert "Log intact." in out and f"{report['events']} entries verified" in out
    first = min(link["id"] for link in cli.json("audit", "job", _any_job(cli))["audit"])
    with transaction(cli.gateway.runtime.sessions) as s:
        actor = s.scalar(text("SELECT actor FROM audit_events WHERE id = :id"), {"id": first})
        s.execute(text("UPDATE audit_events SET actor = 'mallory' WHERE id = :id"),
                  {"id": first})
    try:
        broken = auditor("audit", "verify", code=errors.FAILURE).stdout
        assert f"BROKEN at entry {first} (edited)" in broken
    finally:
        with transaction(cli.gateway.runtime.sessions) as s:
            s.execute(text("UPDATE audit_events SET actor = :actor WHERE id = :id"),
                      {"actor": actor, "id": first})
    auditor("audit", "verify")


def test_audit_verify_proves_the_log_still_begins_with_a_kept_head(cli: Cli,
                                                                   tmp_path: Path) -> None:
    auditor = _login_as_auditor(cli, tmp_path / "auditor")
    cli("submit", "-q", "--exe", "sh", "--wait", "--", "-c", "true")
    take_in(cli.gateway.runtime, every=0)
    first = auditor.json("audit", "verify")["head"]  # kept as verified
    cli("submit", "-q", "--exe", "sh", "--wait", "--", "-c", "true")
    take_in(cli.gateway.runtime, every=0)
    later = auditor("audit", "verify").stdout
    assert (f"The log still begins with the tree of {first['size']} entries verified "
            "before") in later
    # A head kept elsewhere that this log does not begin with: another root, a larger tree.
    for changed, named in (({"root": "ab" * 32}, "no longer begins with the tree of"),
                           ({"size": 10**9}, "entries were removed")):
        kept = tmp_path / "kept-head.json"
        kept.write_text(json.dumps({**first, **changed}))
        out = auditor("audit", "verify", "--head", str(kept), code=errors.FAILURE).stdout
        assert "Log intact." in out and "HISTORY REWRITTEN: " in out and named in out
        report = json.loads(auditor("audit", "verify", "--head", str(kept), "--json",
                                    code=errors.FAILURE).stdout)
        assert not report["ok"] and named in report["kept_head_fault"]


def _any_job(cli: Cli) -> str:
    job_id: str = cli.json("list")["items"][0]["id"]
    return job_id


def test_audit_verify_names_a_forged_grant(cli: Cli, tmp_path: Path) -> None:
    # +1,000 SU written into a grant's legs and its allocation's sums together: the chain
    # and the sums hold, the seal of the grant's link does not.
    tag = uuid.uuid4().hex[:6]
    admin = person(cli.gateway, tmp_path, f"root{tag}", "admin")
    project = f"forged-{tag}"
    admin("project", "create", project)
    granted = admin.json("admin", "allocation", "grant", project, "5", "--ends", "2099-01-01",
                         "--reason", "award")
    auditor = _login_as_auditor(cli, tmp_path / "auditor")
    clean = auditor("audit", "verify").stdout
    assert "Ledger bound to the log:" in clean and "LEDGER DIFFERS" not in clean
    forge = ("UPDATE ledger_entries SET amount_milli = amount_milli + :d * "
             "CASE account WHEN 'available' THEN 1 ELSE -1 END WHERE txn = :txn",
             "UPDATE allocations SET awarded_milli = awarded_milli + :d, "
             "available_milli = available_milli + :d WHERE id = :id")
    with transaction(cli.gateway.runtime.sessions) as s:
        txn = s.scalar(text("SELECT txn FROM ledger_entries WHERE allocation_id = :id"),
                       {"id": granted["id"]})
        for statement in forge:
            s.execute(text(statement), {"d": 1_000_000, "txn": txn, "id": granted["id"]})
    try:
        (seen,) = admin.json("admin", "allocation", "list", "--project", project)["items"]
        assert seen["available"] == "1005.000"  # what the project's PI would be shown
        forged = auditor("audit", "verify", code=errors.FAILURE).stdout
        assert "Log intact." in forged and "Ledger balanced;" in forged
        assert f"LEDGER DIFFERS at transaction {txn} (deposit, " in forged
        assert "funding -1,005.000 SU of allocation" in forged
    finally:
        with transaction(cli.gateway.runtime.sessions) as s:
            for statement in forge:
                s.execute(text(statement), {"d": -1_000_000, "txn": txn, "id": granted["id"]})
    auditor("audit", "verify")


def test_a_short_id_resolves_over_the_jobs_the_caller_may_audit(
        gateway: LiveGateway, tmp_path: Path) -> None:
    """Issue 28: an admin's `audit job f678224b` found no job "of yours". A short id names
    any job whose story the caller may read (an admin or auditor: every job; a PI: their
    projects'), and still no job of anyone else."""
    tag = uuid.uuid4().hex[:6]
    admin = person(gateway, tmp_path, f"root{tag}", "admin")
    pi = person(gateway, tmp_path, f"pi{tag}")
    bob = person(gateway, tmp_path, f"bob{tag}")
    outsider = person(gateway, tmp_path, f"eve{tag}")
    project = f"audited-{tag}"
    admin("project", "create", project, "--description", "audited")
    admin("project", "add-member", project, f"pi{tag}", "--pi")
    pi("project", "add-member", project, f"bob{tag}")
    job_id = bob("submit", "--project", project, "--name", "bobs", "--exe", "sh", "--quiet",
                 "--wait", "--", "-c", "true").stdout.strip()
    short = job_id[:8]
    for reader in (bob, admin, pi):
        assert reader.json("audit", "job", short)["job_id"] == job_id
    assert f"Job {job_id} (bobs)" in admin("audit", "job", short.upper()).stdout
    # Elsewhere an admin reads every job by a short id too, and a PI their members'
    # (issue 31), but not their output.
    assert admin.json("show", short)["id"] == job_id
    assert pi.json("show", short)["id"] == job_id
    pi("logs", short, code=errors.NOT_FOUND)
    # Anyone else: no prefix, and no whole id, names the job.
    missing = outsider("audit", "job", short, code=errors.NOT_FOUND)
    assert f"No job you can read has an id starting with '{short}'" in missing.stderr
    outsider("audit", "job", job_id, code=errors.NOT_FOUND)
