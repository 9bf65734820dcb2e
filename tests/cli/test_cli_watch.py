"""`gridgate watch`: job state changes from the event stream, one line each (or one
CloudEvent a line with --json), ending once every named job has ended; Ctrl-C stops the
watch, not the jobs. `gridgate events` (a job's history) stays as it was."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.cli.test_first_hour_cli import Running
from tests.waiting_jobs import let_all_go, waits


def test_watching_an_ended_job_prints_its_state_and_returns(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--wait", "--exe", "true").stdout.split()[0]
    lines = cli("watch", job_id).stdout.splitlines()
    assert len(lines) == 1, lines
    day, clock, short, final = lines[0].split()
    assert (short, final) == (job_id[:8], "COMPLETED")
    assert len(day) == 10 and len(clock) == 8
    # The job's history is still `gridgate events`.
    assert [e["to_state"] for e in cli.json("events", job_id)["items"]][-1] == "COMPLETED"


def test_watch_prints_each_change_as_it_happens_until_the_jobs_end(cli: Cli) -> None:
    held = cli("submit", "-q", "--exe", "sh", "--", "-c", waits()).stdout.strip()
    done = cli("submit", "-q", "--wait", "--exe", "true").stdout.split()[0]
    watching = Running(cli, "watch", held, done, "--json")
    try:
        # The job runs (held by its file) while the watch is on: let it go from there.
        watching.line("stdout", '"to":"RUNNING"')
        let_all_go(cli.gateway.settings.data_dir / "jobs")
        out, err = watching.proc.communicate(timeout=120)
    finally:
        if watching.proc.poll() is None:
            watching.proc.kill()
            cli("cancel", held, code=None)
    assert watching.proc.returncode == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert all(e["specversion"] == "1.0" and e["type"] == "org.gridgate.job.state"
               for e in events)
    assert [e["data"]["to"] for e in events if e["subject"] == held][-1] == "COMPLETED"
    assert [int(e["id"]) for e in events] == sorted(int(e["id"]) for e in events)
    history = [str(e["id"]) for e in cli.json("events", held)["items"]]
    seen = [e["id"] for e in events if e["subject"] == held]
    assert seen == history[len(history) - len(seen):]  # the last ones, each once, in order


def test_ctrl_c_stops_the_watch_and_says_the_jobs_keep_running(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", waits()).stdout.strip()
    watching = Running(cli, "watch", job_id)
    try:
        watching.line("stdout", job_id[:8])
        code, err = watching.interrupt()
    finally:
        let_all_go(cli.gateway.settings.data_dir / "jobs")
    assert code == errors.INTERRUPTED
    assert f"Stopped watching; the jobs keep running. Watch again with 'gridgate watch " \
           f"{job_id}'." in " ".join(err.split())


def test_watch_one_project_shows_its_jobs_and_refuses_one_not_yours(cli: Cli) -> None:
    project = cli.json("submit", "--exe", "true")["project"]
    watching = Running(cli, "watch", "--project", project, "--json")
    # The watch shows what happens once it is subscribed, which this test cannot see
    # from outside: jobs are submitted until one shows.
    stop = threading.Event()

    def submit_until_seen() -> None:
        while not stop.wait(0.5):
            cli.json("submit", "--exe", "true")

    submitter = threading.Thread(target=submit_until_seen, daemon=True)
    submitter.start()
    try:
        event = json.loads(watching.line("stdout", f'"project":"{project}"'))
        assert event["type"] == "org.gridgate.job.state"
        watching.interrupt()
    finally:
        stop.set()
        submitter.join(timeout=60)
        if watching.proc.poll() is None:
            watching.proc.kill()
    refused = cli("watch", "--project", "not-mine", code=None)
    assert refused.exit_code != 0
    assert "not a member of a project named 'not-mine'" in " ".join(refused.stderr.split())


def test_on_a_terminal_watch_redraws_a_table_of_the_jobs_in_place(cli: Cli) -> None:
    held = cli("submit", "-q", "--name", "held", "--exe", "sh", "--", "-c",
               waits()).stdout.strip()
    master, child_end = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "watch", held],
                            env={**os.environ, **cli.env, "COLUMNS": "100"},
                            stdout=child_end, stderr=subprocess.PIPE)
    os.close(child_end)
    seen = b""
    try:
        while b"RUNNING" not in seen:  # the row shows the job running (held by its file)
            seen += os.read(master, 4096)
        let_all_go(cli.gateway.settings.data_dir / "jobs")
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's other end closed: the watch ended
                break
            if not chunk:
                break
            seen += chunk
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            cli("cancel", held, code=None)
    text = seen.decode().replace("\r\n", "\n")
    tables = text.split("\x1b[J")[:-1]
    assert len(tables) >= 2 and all(t.startswith("\x1b[2F") for t in tables[1:]), text
    last = [line.removesuffix("\x1b[K") for line in tables[-1][len("\x1b[2F"):].splitlines()]
    assert last[0].split() == ["ID", "NAME", "STATE", "SITE", "START", "REASON"]
    assert last[1].split()[:4] == [held[:8], "held", "COMPLETED", "local"]
    # START: when it started (a real start: no '~'), local time, today or another day.
    assert re.fullmatch(r"(\d\d-\d\d )?\d\d:\d\d", " ".join(last[1].split()[4:])), last[1]
