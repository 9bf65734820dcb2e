"""Issue 14, a researcher's first hour with the CLI: the gateway is remembered with the
login and `--gateway` works after any command; `whoami`; MPI jobs without a launcher."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
import yaml
from rich.console import Console
from typer.core import TyperGroup

from gateway.cli import errors, render
from gateway.cli.main import app
from gateway.cli.state import HOST_COMMANDS
from gateway.client.api import GatewayClient
from gateway.client.credentials import CredentialStore, StoredTokenProvider
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def logged_in_without_env(gateway: LiveGateway, tmp_path: Path) -> Cli:
    """A CLI with no GRIDGATE_URL that logged in with `login --gateway URL`."""
    cli = Cli(gateway, tmp_path / "config")
    del cli.env["GRIDGATE_URL"]
    client_id, secret = gateway.new_client("first-hour")
    (tmp_path / "secret").write_text(secret)
    cli("login", "--gateway", gateway.url, "--client-id", client_id,
        "--client-secret-file", str(tmp_path / "secret"))
    return cli


def test_the_gateway_of_the_login_is_remembered(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    # No --gateway, no GRIDGATE_URL: the commands go where the login went.
    assert cli.json("list")["items"] == []
    job_id = cli("submit", "-q", "--exe", "true").stdout.strip()
    assert cli.json("show", job_id)["id"] == job_id
    health = cli("health").stdout
    assert health.startswith(f"{gateway.url}: ok")


def test_gateway_is_accepted_after_any_command(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    assert cli.json("list", "--gateway", gateway.url)["items"] == []
    other = f"http://127.0.0.1:{closed_port()}"
    # The option after the command wins over GRIDGATE_URL and the remembered gateway.
    cli.env["GRIDGATE_URL"] = gateway.url
    down = cli("health", "--gateway", other, code=errors.UNREACHABLE)
    assert other in down.stderr
    # A login elsewhere is not sent to `other`; the hint names both servers.
    refused = cli("list", "--gateway", other, code=errors.AUTH)
    assert refused.stderr.strip() == (
        f"error: You are logged in to {gateway.url}, not {other}: run 'gridgate login "
        f"--gateway {other}' to log in there, or leave out --gateway and GRIDGATE_URL to "
        f"use {gateway.url}.")


def test_every_command_that_reaches_a_gateway_takes_the_option() -> None:
    root = typer.main.get_command(app)
    missing, seen = [], 0

    def walk(group: TyperGroup, path: str) -> None:
        nonlocal seen
        for name, command in group.commands.items():
            where = f"{path} {name}".strip()
            if where in HOST_COMMANDS:
                continue
            if isinstance(command, TyperGroup):
                walk(command, where)
                continue
            seen += 1
            if not any("--gateway" in getattr(p, "opts", ()) for p in command.params):
                missing.append(where)

    assert isinstance(root, TyperGroup)
    walk(root, "")
    assert seen > 30 and missing == []


def test_whoami_names_the_account_projects_scopes_and_expiry(
        gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    me = cli.json("whoami")
    assert me["gateway"] == gateway.url and me["issuer"] == "local"
    assert me["user"].startswith("client first-hour (") and me["subject"]
    assert me["scopes"] == ["jobs:read", "jobs:write", "sites:read"]
    assert me["projects"] == [{"name": f"~{me['client_id']}", "standing": "pi"}]
    assert me["token_expires_at"] is not None and me["client_id"]
    table = cli("whoami").stdout
    for line in (f"Gateway        {gateway.url}", f"User           {me['user']}",
                 "Issuer         local (this gateway's own accounts)",
                 f"Projects       ~{me['client_id']} (PI)",
                 "Scopes         jobs:read jobs:write sites:read"):
        assert line in table, table
    assert "Token expires" in table and "(in " in table
    # The login said who, too.
    (tmp_path / "again").mkdir()
    again = logged_in_without_env(gateway, tmp_path / "again")
    who = again.json("whoami")["user"]
    login = again("login", "--gateway", gateway.url, "--client-id",
                  again.json("whoami")["client_id"], "--client-secret-file",
                  str(tmp_path / "again" / "secret"))
    assert f"Logged in to {gateway.url} as {who}; token stored in " in login.stderr


def test_ranks_without_a_launcher_is_refused_naming_mpi_launcher(cli: Cli) -> None:
    result = cli("submit", "--exe", "true", "--ranks", "2", code=errors.PROBLEM)
    assert result.stderr.startswith("error: 2 ranks need an MPI launcher")
    assert "mpi.launcher" in result.stderr
    assert cli.json("list")["items"] == [] or all(
        j["spec"]["resources"].get("ranks", 1) == 1 for j in cli.json("list")["items"])


def test_json_of_whoami_is_json(cli: Cli) -> None:
    assert json.loads(cli("whoami", "--json").stdout)["user"]


# --- local inputs: `source: ./file` and `--input FILE` are uploaded by submit ------------


def test_submit_uploads_local_inputs_from_the_spec_and_flags(cli: Cli, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "table.txt").write_text("from the spec\n")
    extra = tmp_path / "extra.txt"
    extra.write_text("from --input\n")
    (work / "job.yaml").write_text(
        "name: cat\nexecutable: cat\nargs: [in/table.txt, extra.txt]\n"
        "inputs:\n  - {source: ./data/table.txt, dest: in/table.txt}\n")
    result = cli("submit", str(work / "job.yaml"), "--input", str(extra), "--wait")
    job_id = result.stdout.split()[2]
    assert cli("logs", job_id).stdout == "from the spec\nfrom --input\n"
    inputs = cli.json("show", job_id)["spec"]["inputs"]
    assert [i["dest"] for i in inputs] == ["in/table.txt", "extra.txt"]
    assert all(i["source"].startswith("upload:") for i in inputs)
    assert "Input in/table.txt: " in result.stderr and "14 B) is upload " in result.stderr
    # The same files again: their complete uploads are used again, nothing is sent twice.
    again = cli("submit", str(work / "job.yaml"), "--input", str(extra), "--wait")
    assert cli.json("show", again.stdout.split()[2])["spec"]["inputs"] == inputs
    assert len(cli.json("uploads")["items"]) == 2


def test_a_missing_local_input_is_named_before_anything_is_sent(cli: Cli,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "name: x\nexecutable: cat\ninputs: [{source: ./nope.txt, dest: a}]\n")
    result = cli("submit", str(tmp_path / "job.yaml"), code=errors.FAILURE)
    assert result.stderr.strip() == (
        f"error: inputs[0].source './nope.txt': there is no file {tmp_path}/nope.txt. A "
        "source without upload:, site:// or https:// is a file on this machine, relative "
        "to the job spec's directory; gridgate submit uploads it.")
    assert cli.json("list")["items"] == [] or all(
        j["name"] != "x" for j in cli.json("list")["items"])


def test_a_failed_wait_prints_the_end_of_stderr(cli: Cli) -> None:
    script = "for i in $(seq 1 30); do echo line $i >&2; done; echo cause >&2; exit 3"
    result = cli("submit", "--exe", "sh", "--wait", "--", "-c", script, code=3)
    job_id = result.stdout.split()[2]
    err = result.stderr
    assert f"--- stderr of job {job_id} (last 10 lines; all of it: gridgate " in err
    assert err.rstrip().endswith("line 22\nline 23\nline 24\nline 25\nline 26\nline 27\n"
                                 "line 28\nline 29\nline 30\ncause\n---"), err
    assert "line 21\n" not in err
    waited = cli("wait", job_id, code=3)
    assert "cause" in waited.stderr and f"logs --stderr {job_id}" in waited.stderr
    # Scripts asking for JSON get JSON only.
    assert "---" not in cli("wait", job_id, "--json", code=3).stderr


# --- Ctrl-C: the job keeps running; say so, and how to go on -----------------------------


# The CLI as `python -m gateway.cli.main` runs it, with a SIGUSR1 that prints every thread's
# stack: a child stuck after Ctrl-C shows where.
_DUMPS_STACKS_ON_SIGUSR1 = (
    "import faulthandler, runpy, signal, sys; "
    "faulthandler.register(signal.SIGUSR1, all_threads=True); "
    "sys.argv[0] = 'gridgate'; runpy.run_module('gateway.cli.main', run_name='__main__')")


class Running:
    """`gridgate ARGS` in a child process (so Ctrl-C is a real SIGINT), read line by line."""

    def __init__(self, cli: Cli, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _DUMPS_STACKS_ON_SIGUSR1, *args],
            env={**os.environ, **cli.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)

    def line(self, stream: str, contains: str) -> str:
        """Read `stream` until a line containing `contains` (the child is then at a known
        point: no sleeping, no timing)."""
        pipe = self.proc.stdout if stream == "stdout" else self.proc.stderr
        assert pipe is not None
        seen = ""
        while True:
            line = pipe.readline()
            assert line, f"ended before {contains!r}: {seen}"
            seen += line
            if contains in line:
                return line

    def interrupt(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Stuck: its threads' stacks say where (then it is killed).
            self.proc.send_signal(signal.SIGUSR1)
            try:
                _, err = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate()
            raise AssertionError(f"no exit 60 s after Ctrl-C; stderr:\n{err}") from None
        return self.proc.returncode, err


def stop_hint(job_id: str, doing: str) -> str:
    return (f"Stopped {doing}; job {job_id} keeps running. Follow it with 'gridgate wait "
            f"{job_id}' or 'gridgate logs -f {job_id}'; cancel it with 'gridgate cancel "
            f"{job_id}'.")


def test_ctrl_c_while_waiting_leaves_the_job_running_and_says_so(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sleep", "--", "300").stdout.strip()
    try:
        waiting = Running(cli, "wait", job_id)
        waiting.line("stderr", f"job {job_id}: ")
        code, err = waiting.interrupt()
        assert (code, err.splitlines()[-1]) == (errors.INTERRUPTED, stop_hint(job_id, "waiting"))
        assert cli.json("show", job_id)["state"] in ("ACCEPTED", "STAGING_IN", "QUEUED",
                                                     "RUNNING")
        submitting = Running(cli, "submit", "--exe", "sleep", "--wait", "--", "300")
        second = submitting.line("stdout", "Submitted job ").split()[2]
        code, err = submitting.interrupt()
        assert (code, err.splitlines()[-1]) == (errors.INTERRUPTED, stop_hint(second, "waiting"))
        cli("cancel", second)
    finally:
        cli("cancel", job_id)
    # A cancelled job's code is not Ctrl-C's.
    assert cli("wait", job_id, code=errors.CANCELLED).exit_code != errors.INTERRUPTED


def test_ctrl_c_while_following_output(cli: Cli) -> None:
    job_id = cli("submit", "-q", "--exe", "sh", "--", "-c", "echo started; sleep 300"
                 ).stdout.strip()
    try:
        following = Running(cli, "logs", "-f", job_id)
        following.line("stdout", "started")
        code, err = following.interrupt()
        assert (code, err.strip()) == (errors.INTERRUPTED,
                                       stop_hint(job_id, "following its output"))
    finally:
        cli("cancel", job_id)


def test_ctrl_c_during_an_input_upload_then_the_same_command_resumes(
        cli: Cli, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as f:  # 16 chunks of 8 MiB: many requests after the first
        f.truncate(128 * 2**20)
    args = ("submit", "-q", "--exe", "true", "--input", str(big))
    submitting = Running(cli, *args)
    with GatewayClient(cli.gateway.url, StoredTokenProvider(
            cli.gateway.url, CredentialStore(Path(cli.env["GRIDGATE_CONFIG_DIR"])
                                             / "credentials.json"))) as client:
        while not [u for u in client.list_uploads() if u["state"] == "open" and u["offset"]]:
            assert submitting.proc.poll() is None, submitting.proc.communicate()
        # The child has sent its first chunk: interrupt it mid-file.
        code, err = submitting.interrupt()
        [stopped] = client.list_uploads()
    assert code == errors.INTERRUPTED, err
    assert err.strip().startswith(f"Upload of {big} stopped at ")
    assert err.strip().endswith(
        " of 128.0 MiB; the gateway keeps what arrived: no job was submitted; run the same "
        "command again and the upload continues where it stopped.")
    assert stopped["state"] == "open" and 0 < stopped["offset"] < stopped["size"]
    assert cli.json("list")["items"] == []
    job_id = cli(*args).stdout.strip()
    [done] = cli.json("uploads")["items"]
    assert (done["id"], done["state"]) == (stopped["id"], "complete")
    assert cli.json("show", job_id)["spec"]["inputs"] == [
        {"source": f"upload:{stopped['id']}", "dest": "big.bin"}]


# --- one byte unit ---------------------------------------------------------------------


def test_progress_bars_use_binary_units() -> None:
    out = io.StringIO()
    progress = render.transfer_progress(Console(file=out, width=150))
    task_id = progress.add_task("upload big.bin", total=3 * 2**30)
    progress.update(task_id, completed=3 * 2**29)
    [task] = progress.tasks
    task.finished_speed = 2.5 * 2**20
    progress.console.print(progress.make_tasks_table(progress.tasks))
    shown = out.getvalue()
    assert "1.5/3.0 GiB" in shown and "2.5 MiB/s" in shown, shown
    assert " GB" not in shown and " MB" not in shown


# --- the docs' MPI example, as written ---------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_mpi_example_runs_as_written(cli: Cli, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    section = (ROOT / "docs" / "researchers" / "mpi.md").read_text()
    shown = section[section.index("```yaml\n") + 8:section.index("```\n", 1)]
    example = ROOT / "examples" / "pingpong" / "job.yaml"
    assert yaml.safe_load(shown) == yaml.safe_load(example.read_text())
    command = "gridgate submit examples/pingpong/job.yaml --wait"
    assert f"```\n{command}\n```" in section
    monkeypatch.chdir(ROOT)  # from the clone, as the guides' commands are
    result = cli(*command.split()[1:])
    assert ": COMPLETED (exit 0)" in result.stderr.splitlines()[-1], result.stderr
    job_id = result.stdout.split()[2]
    sizes = [json.loads(line)["bytes"] for line in cli("logs", job_id).stdout.splitlines()
             if line.startswith("{")]
    assert sizes == [0] + [2**k for k in range(21)]  # 0 B to 1 MiB
    # Its output file comes back as the guide's next steps say.
    listed = cli("outputs", job_id).stdout
    assert "results.jsonl" in listed and "gateway" in listed
    cli("fetch", job_id, "-o", str(tmp_path / "results"))
    fetched = (tmp_path / "results" / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["bytes"] for line in fetched] == sizes
