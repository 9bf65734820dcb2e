"""The gridgate CLI against a real gateway on localhost (uvicorn in a thread)."""

from __future__ import annotations

import json
import stat
import sys
import uuid
from pathlib import Path

import yaml

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.cli.test_first_hour_cli import Running
from tests.waiting_jobs import let_all_go, waits


def test_login_stores_credentials_0600(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "config" / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    stored = json.loads(path.read_text())
    assert stored["gateway"] == cli.gateway.url
    assert stored["access_token"] and stored["expires_at"] > 0
    assert set(stored) == {"gateway", "access_token", "refresh_token", "expires_at",
                           "client_id", "token_endpoint"}


def test_submit_wait_show_logs_events(cli: Cli) -> None:
    result = cli("submit", "--name", "greet", "--exe", "sh", "--label", "kind=greeting",
                 "--wait", "--", "-c", "echo hello; echo warn >&2")
    job_id = result.stdout.split()[2]
    assert "COMPLETED" in result.stderr
    assert cli("logs", job_id).stdout == "hello\n"
    assert cli("logs", "--stderr", job_id).stdout == "warn\n"
    shown = cli.json("show", job_id)
    assert shown["state"] == "COMPLETED" and shown["labels"] == {"kind": "greeting"}
    assert shown["spec"]["args"] == ["-c", "echo hello; echo warn >&2"]
    table = cli("show", job_id).stdout
    assert "COMPLETED" in table and "greet" in table
    events = cli.json("events", job_id)["items"]
    assert [e["to_state"] for e in events][-1] == "COMPLETED"
    assert "COMPLETED" in cli("events", job_id).stdout


def test_wait_exit_code_mirrors_a_failing_job(cli: Cli) -> None:
    result = cli("submit", "--exe", "sh", "--wait", "--", "-c", "exit 7", code=7)
    job_id = result.stdout.split()[2]
    assert "FAILED" in result.stderr
    cli("wait", job_id, code=7)
    assert cli.json("wait", job_id, code=7)["exit_code"] == 7  # the JSON view exits 7 as well


def test_wait_on_a_cancelled_job_exits_cancelled(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", waits()).stdout.strip()
    cancelled = cli.json("cancel", job_id)
    # Not yet started: cancelled at once; already at the site: cancel requested.
    assert cancelled["state"] == "CANCELLED" or cancelled["cancel_requested"] is True
    cli("wait", job_id, code=errors.CANCELLED)
    assert cli.json("show", job_id)["state"] == "CANCELLED"


def test_wait_timeout_exits_124(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", waits()).stdout.strip()
    try:
        cli("wait", "--timeout", "0.5", "--interval", "0.2", job_id, code=errors.TIMEOUT)
    finally:
        cli("cancel", job_id)


def test_wait_until_running_returns_once_the_job_started(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", waits()).stdout.strip()
    try:
        started = cli("wait", "--until", "running", "--interval", "0.2", job_id)
        assert started.stderr.splitlines()[-1] == f"job {job_id}: RUNNING", started.stderr
        assert cli.json("show", job_id)["state"] == "RUNNING"  # held by the file: still on
        let_all_go(cli.gateway.settings.data_dir / "jobs")
        cli("wait", job_id)
    finally:
        cli("cancel", job_id, code=None)
    # A job that had ended when the wait began: the exit code mirrors its end.
    failed = cli("submit", "-q", "--exe", "false").stdout.strip()
    cli("wait", failed, code=1)
    cli("wait", "--until", "running", failed, code=1)
    assert cli("wait", "--until", "running", job_id).exit_code == errors.OK


def test_spec_file_with_overrides(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("name: from-file\nexecutable: echo\nargs: [from, file]\n"
                    "resources:\n  walltime: '00:05:00'\nlabels:\n  a: '1'\n")
    job = json.loads(cli("submit", str(spec), "--label", "b=2", "--walltime", "120",
                         "--json", "--", "from", "flags").stdout)
    assert job["name"] == "from-file"
    assert job["spec"]["args"] == ["from", "flags"]
    assert job["spec"]["resources"]["walltime"] == 120
    assert job["labels"] == {"a": "1", "b": "2"}
    as_json = tmp_path / "job.json"
    as_json.write_text(json.dumps({"name": "j", "executable": "true"}))
    assert json.loads(cli("submit", str(as_json), "--json").stdout)["name"] == "j"


def test_bad_spec_prints_problem_detail_and_fields(cli: Cli, tmp_path: Path) -> None:
    result = cli("submit", "--exe", "true", "--env", "LD_PRELOAD=/evil.so",
                 code=errors.PROBLEM)
    assert result.stdout == ""
    assert "LD_PRELOAD" in result.stderr
    assert "environment" in result.stderr  # the field is named
    assert "Traceback" not in result.stderr
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\nexecutable: true\nwalltime: 5\n")  # not a top-level field
    result = cli("submit", str(spec), code=errors.PROBLEM)
    assert "walltime" in result.stderr
    result = cli("submit", "--exe", "true", "--ranks", "100000", code=errors.PROBLEM)
    assert "ranks" in result.stderr.lower() or "cores" in result.stderr.lower()


def test_mail_flags_reach_the_gateway(cli: Cli) -> None:
    # This gateway has no SMTP relay: it says so, naming the field the flag set.
    result = cli("submit", "--exe", "true", "--mail-type", "END,FAIL", code=errors.PROBLEM)
    assert "This gateway sends no mail" in result.stderr and "notify.mail" in result.stderr
    result = cli("submit", "--exe", "true", "--mail-type", "end", "--mail-user", "not mail",
                 code=errors.PROBLEM)
    assert "notify.to" in result.stderr and "mail address" in result.stderr


def test_local_usage_errors(cli: Cli, tmp_path: Path) -> None:
    cli("submit", code=errors.USAGE)
    assert "not a job spec" in cli("submit", "nope.txt", code=errors.USAGE).stderr
    assert "KEY=VALUE" in cli("submit", "--exe", "true", "--env", "NOEQUALS",
                              code=errors.FAILURE).stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    assert "not valid YAML" in cli("submit", str(broken), code=errors.FAILURE).stderr


def test_list_filters_json_and_all_pages(cli: Cli) -> None:
    tag = uuid.uuid4().hex[:8]
    ids = [cli("submit", "-q", "--exe", "true", "--label", f"batch={tag}").stdout.strip()
           for _ in range(3)]
    page = cli.json("list", "--label", f"batch={tag}", "--limit", "2")
    assert [j["id"] for j in page["items"]] == ids[::-1][:2]
    assert page["next_cursor"]
    everything = cli.json("list", "--label", f"batch={tag}", "--limit", "1", "--all")
    assert [j["id"] for j in everything["items"]] == ids[::-1]
    table = cli("list", "--label", f"batch={tag}", "--limit", "2")
    assert ids[-1][:8] in table.stdout and "--cursor" in table.stderr
    assert cli.json("list", "--label", "batch=none")["items"] == []


def test_logs_tail_and_follow(cli: Cli) -> None:
    script = "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done"
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", script).stdout.strip()
    followed = cli("logs", "-f", job_id).stdout
    assert followed == "".join(f"line {i}\n" for i in range(1, 6))
    assert cli("logs", "--tail", "2", job_id).stdout == "line 4\nline 5\n"
    assert cli("logs", "--tail", "0", job_id).stdout == ""
    assert cli("logs", "-n", "2", "-f", job_id).stdout == "line 4\nline 5\n"


def test_logs_follow_of_a_held_job_ends_with_all_output_when_it_ends(cli: Cli) -> None:
    script = "echo one; " + waits("echo two")
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", script).stdout.strip()
    following = Running(cli, "logs", "-f", job_id)
    try:
        following.line("stdout", "one")  # following the running job
        let_all_go(cli.gateway.settings.data_dir / "jobs")
        rest, err = following.proc.communicate(timeout=300)
    finally:
        if following.proc.poll() is None:
            following.proc.kill()
            cli("cancel", job_id, code=None)
    assert (following.proc.returncode, rest) == (0, "two\n"), err


def test_hostile_text_is_data(cli: Cli, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"x; touch {marker} $(id)\nsecond line"
    result = cli("submit", "--name", hostile, "--exe", "echo", "--env", f"V={hostile}",
                 "--wait", "--", hostile)
    job_id = result.stdout.split()[2]
    assert cli("logs", job_id).stdout == hostile + "\n"
    assert cli.json("show", job_id)["name"] == hostile
    assert not marker.exists()


def test_idempotency_key(cli: Cli) -> None:
    key = uuid.uuid4().hex
    first = cli("submit", "-q", "--exe", "true", "--idempotency-key", key).stdout.strip()
    again = cli("submit", "-q", "--exe", "true", "--idempotency-key", key).stdout.strip()
    assert first == again
    other = cli("submit", "--exe", "false", "--idempotency-key", key, code=errors.PROBLEM)
    assert "Idempotency-Key" in other.stderr


def test_not_found(cli: Cli) -> None:
    missing = str(uuid.uuid4())
    for command in ("show", "events", "cancel", "wait", "logs"):
        result = cli(command, missing, code=errors.NOT_FOUND)
        assert result.stderr.startswith("error: ")


def test_sites_health_schema(cli: Cli) -> None:
    sites = cli.json("sites")["items"]
    assert "local" in [s["name"] for s in sites]
    assert "local" in cli("sites").stdout
    assert cli.json("health")["status"] == "ok"
    assert "ok" in cli("health").stdout
    schema = json.loads(cli("schema").stdout)
    assert "resources" in schema["properties"]


def test_pingpong_example_runs_through_the_gateway(cli: Cli, tmp_path: Path) -> None:
    """The quick start's job: the MPI ping-pong, submitted from its spec file."""
    example = Path(__file__).resolve().parents[2] / "examples" / "pingpong"
    # The job sees only its own directory (the local site's sandbox): stage the program in.
    upload = cli("upload", str(example / "pingpong.py")).stdout.strip()
    spec = yaml.safe_load((example / "job.yaml").read_text())
    spec["inputs"] = [{"source": f"upload:{upload}", "dest": "pingpong.py"}]
    (tmp_path / "job.json").write_text(json.dumps(spec))
    result = cli("submit", "--file", str(tmp_path / "job.json"), "--exe", sys.executable,
                 "--wait", "-q", "--", "pingpong.py", "--max-bytes", "4096",
                 "--target-seconds", "0.002", "--batches", "2")
    job_id = result.stdout.strip()
    lines = [json.loads(line) for line in cli("logs", job_id).stdout.splitlines()
             if line.startswith("{")]
    assert [rec["bytes"] for rec in lines] == [0] + [2**k for k in range(13)]
    assert all(rec["half_round_trip_s"] > 0 and rec["repetitions"] >= 10 for rec in lines)
    job = cli.json("show", job_id)
    assert job["spec"]["resources"]["ranks"] == 2
    assert job["spec"]["mpi"] == {"launcher": "mpirun", "flavor": "mpich"}
