"""`gridgate projects`, `project ...`, `balance` and `admin allocation ...` against a live
gateway (SQLite and PostgreSQL), each person logged in with their own token: the admin
grants through the API, the PI adds a member, everyone reads tables and `--json`."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway


def person(gateway: LiveGateway, tmp_path: Path, name: str, *roles: str) -> Cli:
    """A CLI logged in (client credentials) as a new local user `name` with `roles`."""
    c = Cli(gateway, tmp_path / name)
    role_args = [arg for role in roles for arg in ("--role", role)]
    c("admin", "user", "add", name, *role_args, "--password-stdin", input="long enough pw\n")
    created = json.loads(c("admin", "client", "create", f"{name}-cli", "--user", name,
                           "--json").stdout)
    secret = tmp_path / f"{name}.secret"
    secret.write_text(created["client_secret"] + "\n")
    c("login", "--client-id", created["client_id"], "--client-secret-file", str(secret))
    return c


def rows(out: str, first: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.split()[:1] == [first]]


def test_a_committee_grants_and_the_project_reads_its_balance(
        gateway: LiveGateway, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    admin = person(gateway, tmp_path, f"root{tag}", "admin")
    pi = person(gateway, tmp_path, f"pia{tag}")
    bob = person(gateway, tmp_path, f"bob{tag}")
    project = f"climate-{tag}"
    made = admin("project", "create", project, "--description", "Climate runs")
    assert made.stderr.strip() == f"Created project {project}."
    added = admin("project", "add-member", project, f"pia{tag}", "--pi")
    assert added.stderr.strip() == f"pia{tag} is a PI of project {project}."
    pi("project", "add-member", project, f"bob{tag}")

    first = admin.json("admin", "allocation", "grant", project, "1000", "--ends", "2099-01-01",
                       "--reason", "round 1")
    assert (first["awarded"], first["pool"], first["status"], first["created_by"]) == (
        "1000.000", "*", "active", f"root{tag}")
    assert first["ends_at"] == "2099-01-01T00:00:00Z"
    table = admin("admin", "allocation", "grant", project, "250.5", "--ends", "2099-06-30",
                  "--pool", "local", "--reason", "summer school")
    assert "Granted allocation" in table.stderr and "250.500 SU at pool local" in table.stderr
    (second,) = [a for a in admin.json("admin", "allocation", "list", "--project", project)
                 ["items"] if a["pool"] == "local"]
    # A negative amount is an amount, not an option.
    taken = admin.json("admin", "allocation", "adjust", str(first["id"]), "-250", "--reason",
                       "under-used")
    assert taken["awarded"] == "750.000"
    moved = admin.json("admin", "allocation", "transfer", str(first["id"]), str(second["id"]),
                       "50", "--reason", "rebalance")
    assert (moved["source"]["available"], moved["target"]["available"]) == ("700.000", "300.500")
    suspended = admin("admin", "allocation", "suspend", str(second["id"]), "--reason", "late")
    assert rows(suspended.stdout, str(second["id"]))[0][3] == "suspended"
    admin("admin", "allocation", "resume", str(second["id"]), "--reason", "report received")

    listed = rows(bob("projects").stdout, project)
    assert listed == [[project, "member", "2", "1,000.500", "Climate", "runs"]]
    assert [p["standing"] for p in bob.json("projects")["items"]
            if p["name"] == project] == ["member"]
    balance = bob("balance", "--project", project).stdout
    header = balance.splitlines()[0].split()
    assert header == ["ID", "POOL", "STATUS", "ENDS", "AWARDED", "USED", "HELD", "AVAILABLE"]
    first_row = rows(balance, str(first["id"]))[0]
    assert first_row[1:4] == ["*", "active", "2099-01-01"] and first_row[4:] == [
        "750.000", "0.000", "0.000", "700.000"]
    assert balance.strip().endswith(f"Project {project} may spend 1,000.500 SU now.")
    document = bob.json("balance", "--project", project)
    assert [a["available"] for a in document["allocations"]] == ["700.000", "300.500"]
    # Without --project: every allocation of every project bob may read.
    everything = bob.json("balance")["items"]
    assert {a["project"] for a in everything} == {project}
    shown = pi("project", "show", project).stdout
    assert "Your standing: PI" in shown and rows(shown, f"bob{tag}") == [[f"bob{tag}", "member"]]
    assert pi.json("project", "show", project)["members"] == [
        {"user": f"bob{tag}", "role": "member"}, {"user": f"pia{tag}", "role": "pi"}]


def test_refusals_and_bad_input(gateway: LiveGateway, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    admin = person(gateway, tmp_path, f"root{tag}", "admin")
    eve = person(gateway, tmp_path, f"eve{tag}")
    project = f"secret-{tag}"
    admin("project", "create", project)
    refused = eve("admin", "allocation", "grant", project, "10", "--ends", "2099-01-01",
                  "--reason", "please", code=errors.PROBLEM)
    assert refused.stderr.strip() == "error: Only a gateway administrator may do this."
    hidden = eve("project", "show", project, code=errors.NOT_FOUND)
    assert f"No project named '{project}' that you can see." in hidden.stderr
    eve("balance", "--project", project, code=errors.NOT_FOUND)
    bad = admin("admin", "allocation", "grant", project, "1.0001", "--ends", "2099-01-01",
                "--reason", "x", code=errors.PROBLEM)
    assert "amount: Decimal input should have no more than 3 decimal places" in bad.stderr
    date = admin("admin", "allocation", "grant", project, "1", "--ends", "soon", "--reason",
                 "x", code=errors.USAGE)
    assert "'soon' is not a date" in date.stderr
    nameless = admin("project", "create", "no/slash", code=errors.PROBLEM)
    assert "is not a valid project name" in nameless.stderr
