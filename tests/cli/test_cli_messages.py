"""Error messages (issue 14, item 10), against a live gateway (SQLite and PostgreSQL):
each validation problem printed once, one a line, with the gateway's did-you-mean;
`--site Local` says site names are lower case; `list --state BOGUS` says so once; a
--gateway URL that points at another web server says so instead of `error: Not Found`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gateway.cli import errors
from tests.cli.helpers import Cli


def test_each_problem_once_with_did_you_mean(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("name: t\nexectuable: /bin/true\nresources: {nodes: 1, rank: 2}\n")
    lines = cli("submit", str(spec), code=errors.PROBLEM).stderr.splitlines()
    assert lines[0].startswith("error: Invalid request (") and lines[0].endswith("problems):")
    assert "  exectuable: Extra inputs are not permitted; did you mean 'executable'?" in lines
    assert "  resources.rank: Extra inputs are not permitted; did you mean 'ranks'?" in lines
    assert len(lines) == len(set(lines)), "no problem printed twice"
    assert sum("exectuable" in line for line in lines) == 1


def test_site_names_are_lower_case(cli: Cli) -> None:
    out = cli("submit", "--exe", "true", "--site", "Local", code=errors.PROBLEM).stderr
    assert out.count("site names are lower case; did you mean 'local'?") == 1


def test_a_bad_state_filter_is_said_once(cli: Cli) -> None:
    out = cli("list", "--state", "BOGUS", code=errors.PROBLEM).stderr
    assert out.count("Unknown job state 'BOGUS'; accepted: ACCEPTED, ") == 1
    assert "Traceback" not in out and len(out.splitlines()) == 1


@pytest.fixture
def other_web_server(tmp_path: Path) -> Iterator[str]:
    """A plain web server (HTML 404 pages), as a mistyped --gateway may reach."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_of_another_web_server_says_so(cli: Cli, other_web_server: str) -> None:
    out = cli("--gateway", other_web_server, "health", code=errors.NOT_FOUND).stderr
    assert "answered 404 with text/html, not a gridgate problem document" in out
    assert "points at another web server" in out and out.count("\n") == 1
