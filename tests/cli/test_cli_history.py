"""`gridgate admin history import`: a site's past waits into the gateway's database."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import Cli


def test_import_a_log_and_refuse_a_bad_one(cli: Cli, tmp_path: Path) -> None:
    log = tmp_path / "local.swf"
    log.write_text("; UnixStartTime: 1700000000\n"
                   "1 0 600 30 1 -1 -1 1 600 -1 1 1 1 1 1 -1 -1 -1\n"
                   "2 5 -1 30 1 -1 -1 1 600 -1 5 1 1 1 1 -1 -1 -1\n")
    done = cli("admin", "history", "import", "local", str(log))
    assert "Imported 1 waits for site local (1 records without a wait skipped)." in done.stderr
    bad = cli("admin", "history", "import", "local", str(log), "--format", "sacct", code=None)
    assert bad.exit_code != 0 and "line 1: 1 fields, expected 8" in bad.stderr, bad.stderr
    zone = cli("admin", "history", "import", "local", str(log), "--timezone", "Mars/Olympus",
               code=None)
    assert zone.exit_code == 2 and "unknown time zone 'Mars/Olympus'" in zone.stderr
