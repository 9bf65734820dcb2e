"""The CLI as a Slurm user expects it (issue 14, items 6 and 7), against a live gateway
(SQLite and PostgreSQL, its worker running): `list` readable at 80 columns with short
ids; any unique start of an id accepted by every command that takes one (ambiguous or
unknown: a clear error, never another user's job); cancel, hold and release of many jobs
by id or by selection, with a confirmation, one result per job.

Jobs that must stay ACCEPTED are pinned to the local site while it is drained (a drained
site keeps what is pinned to it, and claims nothing)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.cli.test_cli_routing import drained
from tests.client.live import LiveGateway


@pytest.fixture
def parked(gateway: LiveGateway) -> Iterator[None]:
    """The local site drained for the test: jobs pinned to it wait ACCEPTED."""
    drained(gateway, True)
    try:
        yield
    finally:
        drained(gateway, False)


def submit(cli: Cli, name: str, *args: str) -> str:
    return cli("submit", "-q", "--name", name, "--site", "local", *args, "--exe", "true"
               ).stdout.strip()


def second_user(gateway: LiveGateway, tmp_path: Path) -> Cli:
    other = Cli(gateway, tmp_path / "other-config")
    gateway.login(tmp_path / "other-config", "other-user")
    return other


def test_list_fits_80_columns_with_short_ids(cli: Cli, parked: None) -> None:
    job_id = submit(cli, "pingpong-sweep")
    cli.env["COLUMNS"] = "80"
    out = cli("list", "--limit", "5").stdout
    lines = out.splitlines()
    # The width rule (gateway.cli.columns) leaves out the least important columns, if
    # any (whole headers: tests/cli/test_render_width.py has the order).
    assert lines[0].split()[:4] == ["ID", "NAME", "STATE", "SITE"], out
    assert lines[0].split()[-1] == "REASON", out
    assert all(len(line) <= 80 for line in lines), out
    assert job_id not in out
    row = next(line for line in lines if line.startswith(job_id[:8]))
    assert row.split()[:4] == [job_id[:8], "pingpong-sweep", "ACCEPTED", "local"]


def test_every_job_command_takes_a_unique_prefix(cli: Cli, gateway: LiveGateway,
                                                 tmp_path: Path) -> None:
    job_id = submit(cli, "prefix")
    cli("wait", job_id[:8])
    for command in ("show", "explain"):
        assert job_id in cli(command, job_id[:8], "--json").stdout
    assert cli.json("events", job_id[:8])["items"][-1]["to_state"] == "COMPLETED"
    assert job_id in cli("show", job_id[:5].upper()).stdout  # case does not matter
    cli("logs", job_id[:8])
    fetched = cli("fetch", job_id[:8], "-o", str(tmp_path / "out"), code=errors.FAILURE)
    assert f"Job {job_id} has no collected outputs" in fetched.stderr
    unknown = cli("show", "fffffffff", code=errors.NOT_FOUND)
    assert "No job you can read has an id starting with 'fffffffff'" in unknown.stderr
    bad = cli("show", "not-an-id", code=errors.NOT_FOUND)  # cannot start any job id
    assert "No job you can read has an id starting with 'not-an-id' (give the first" in bad.stderr
    assert bad.stderr.count("\n") == 1
    # Another user's job is never matched by a prefix, even a whole one.
    other = second_user(gateway, tmp_path)
    assert "No job you can read" in other("show", job_id[:8], code=errors.NOT_FOUND).stderr
    other("show", job_id, code=errors.NOT_FOUND)


def test_an_ambiguous_prefix_lists_the_candidates(cli: Cli, parked: None) -> None:
    # 17 ids over 16 hex digits: at least two start alike (pigeonhole), every run.
    ids = [submit(cli, f"amb-{n}") for n in range(17)]
    first = next(c for c in "0123456789abcdef" if sum(i.startswith(c) for i in ids) > 1)
    result = cli("cancel", first, code=errors.FAILURE)
    assert f"'{first}' starts the ids of " in result.stderr
    listed = [i for i in ids if i in result.stderr]
    assert sorted(listed) == sorted(i for i in ids if i.startswith(first))
    assert all(cli.json("show", i)["state"] == "ACCEPTED" for i in listed)  # nothing done
    cli("cancel", "--all-mine", "--yes")  # this test's user: only these jobs
    assert {cli.json("show", i)["state"] for i in ids} == {"CANCELLED"}


def test_cancel_many_by_id_and_by_selection(cli: Cli, parked: None) -> None:
    tag = uuid.uuid4().hex[:6]
    a, b, c = (submit(cli, f"sweep-{tag}") for _ in range(3))
    keep = submit(cli, f"other-{tag}")
    refused = cli("cancel", "--name", f"sweep-{tag}", input="n\n", code=errors.FAILURE)
    assert "Cancel these 3 job(s)?" in refused.stderr and "Nothing done" in refused.stderr
    assert cli.json("show", a)["state"] == "ACCEPTED"
    two = cli("cancel", a[:8], b[:8])
    assert [line.split()[0] for line in two.stdout.splitlines()[1:]] == [a[:8], b[:8]]
    assert two.stdout.count("Cancel requested (now CANCELLED)") == 2
    # One of them again: a per-job failure, the others still done; exit code of a refusal.
    again = cli("cancel", b, c, "--json", code=errors.PROBLEM)
    items = json.loads(again.stdout)["items"]
    assert [(i["id"], i["ok"]) for i in items] == [(b, False), (c, True)]
    assert "already CANCELLED" in items[0]["error"]["detail"]
    assert items[1]["job"]["state"] == "CANCELLED"
    everything = cli("cancel", "--all-mine", "--state", "accepted", input="y\n")
    assert keep[:8] in everything.stdout and "Cancel these" in everything.stderr
    assert cli.json("show", keep)["state"] == "CANCELLED"
    none_left = cli("cancel", "--name", f"sweep-{tag}")
    assert "nothing to cancel" in none_left.stderr
    assert "not both" in cli("cancel", a, "--all-mine", code=errors.USAGE).stderr
    cli("cancel", code=errors.USAGE)


def test_hold_and_release(cli: Cli, gateway: LiveGateway, tmp_path: Path) -> None:
    drained(gateway, True)
    try:
        job_id = submit(cli, "held-job")
        held = cli.json("hold", job_id[:8])
        assert (held["id"], held["held"], held["state"]) == (job_id, True, "ACCEPTED")
        assert "HELD" in cli("list").stdout
        assert "Held" in cli("show", job_id).stdout
        other = second_user(gateway, tmp_path)
        other("release", job_id, code=errors.NOT_FOUND)
    finally:
        drained(gateway, False)
    done = cli("wait", job_id, "--timeout", "2", code=errors.TIMEOUT)  # held: not run
    assert "still ACCEPTED" in done.stderr
    released = cli("release", job_id[:8])
    assert f"Released: job {job_id} (now ACCEPTED)." in released.stderr
    cli("wait", job_id)
    late = cli("hold", job_id, code=errors.PROBLEM)
    assert "already COMPLETED" in late.stderr
