"""`gridgate list` as a Slurm user reaches for it (issue 28, items 7 and 9), against a
live gateway: --state takes comma lists, repeats and Slurm's names (PD, R, CA, ...),
--name a glob, an unknown state is refused with the accepted names; REASON says why a
job waits, and a piped `wait` says it too. --origin keeps the jobs that came in by one
door (issue 30: a GA4GH TES task is a job), and `show` says which."""

from __future__ import annotations

from pathlib import Path

import httpx

from gateway.cli import errors
from gateway.client.credentials import CredentialStore
from tests.api.test_container_jobs import offer
from tests.cli.helpers import Cli
from tests.cli.test_cli_job_control import parked, submit  # noqa: F401  (a fixture)


def ids(cli: Cli, *args: str) -> set[str]:
    return {job["id"] for job in cli.json("list", "--all", *args)["items"]}


def test_list_by_slurm_state_names_and_name_globs(cli: Cli, parked: None) -> None:  # noqa: F811
    held = submit(cli, "i28-sweep-1", "--label", "t=i28")
    cli("hold", held)
    after = submit(cli, "i28-sweep-2", "--label", "t=i28", "--dependency", f"afterok:{held}")
    ended = submit(cli, "i28-other", "--label", "t=i28")
    cli("cancel", ended)
    mine = ("--label", "t=i28")
    assert ids(cli, *mine, "--state", "PENDING") == {held, after}
    assert ids(cli, *mine, "-t", "pd", "--state", "CA") == {held, after, ended}
    assert ids(cli, *mine, "--state", "RUNNING,QUEUED") == set()
    assert ids(cli, *mine, "--state", "R,cancelled") == {ended}
    assert ids(cli, *mine, "--name", "i28-sweep-*") == {held, after}
    assert ids(cli, *mine, "--name", "i28-sweep-?", "--state", "PD") == {held, after}
    assert ids(cli, *mine, "--name", "i28-other") == {ended}
    assert ids(cli, *mine, "--name", "i28-sweep") == set(), "a plain name is exact"
    bad = cli("list", "--state", "RUNING", code=errors.PROBLEM)
    assert "Unknown job state 'RUNING'; accepted: ACCEPTED," in bad.stderr
    assert "PENDING/PD = ACCEPTED + STAGING_IN + QUEUED" in bad.stderr
    help_words = " ".join(cli("list", "--help").stdout.replace("│", " ").split())
    assert "Slurm's: PENDING/PD = ACCEPTED + STAGING_IN + QUEUED; R = RUNNING;" in help_words

    # REASON: why each waits, in the table as squeue has it.
    cli.env["COLUMNS"] = "200"
    rows = {line.split()[0]: line for line in cli("list", *mine).stdout.splitlines()[1:]}
    assert "held by " in rows[held[:8]] and " HELD " in rows[held[:8]]
    assert "Dependency: waiting for job" in rows[after[:8]]
    assert "cancelled" in rows[ended[:8]], "its reason, lower case beside CANCELLED"
    # A piped wait says why the job waits, not only its state.
    out = cli("wait", after, "--timeout", "0", code=errors.TIMEOUT)
    assert f"job {after}: ACCEPTED: Dependency: waiting for job" in out.stderr


def test_list_by_origin_and_show_says_it(cli: Cli, parked: None) -> None:  # noqa: F811
    native = submit(cli, "i30-native", "--label", "t=i30")
    creds = CredentialStore(Path(cli.env["GRIDGATE_CONFIG_DIR"]) / "credentials.json").load(
        cli.gateway.url)
    assert creds is not None
    # The local site runs no container for an unprivileged gateway: a task pinned to a site
    # that runs it is accepted everywhere this test runs.
    offer(cli.gateway.runtime, "local")
    created = httpx.post(f"{cli.gateway.url}/ga4gh/tes/v1/tasks", timeout=30, headers={
        "Authorization": f"Bearer {creds.access_token}"}, json={
        "name": "i30-task", "tags": {"t": "i30"},
        "executors": [{"image": "alpine:3.20", "command": ["true"]}],
        "resources": {"backend_parameters": {"site": "local"}}})
    assert created.status_code == 200, created.text
    task = created.json()["id"]
    mine = ("--label", "t=i30")
    assert ids(cli, *mine) == {native, task}
    assert ids(cli, *mine, "--origin", "tes") == {task}
    assert ids(cli, *mine, "--origin", "api") == {native}
    assert cli.json("show", task)["origin"] == "tes"
    shown = " ".join(cli("show", task).stdout.split())
    assert "Origin GA4GH TES" in shown
    bad = cli("list", "--origin", "ftp", code=2)
    assert "'ftp' is not one of 'api', 'tes'" in " ".join(bad.stderr.replace("│", " ").split())
