"""`gridgate admin ssh-ca show|rotate` on the gateway host: the CA keys sites trust, as a
table with the TrustedUserCAKeys lines and as JSON; a rotation lists the next key at once
and a second one waits for it; the revocation list for sites (issue 33)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

from adapters.ssh.certificates import fingerprint
from tests.cli.helpers import Cli


def test_show_then_rotate(cli: Cli, tmp_path: Path) -> None:
    first = cli.json("admin", "ssh-ca", "show", "--json")
    assert [(k["generation"], k["state"]) for k in first] == [(1, "signing")]
    assert first[0]["fingerprint"] == fingerprint(first[0]["public_key"])
    ca_dir = cli.gateway.runtime.settings.ssh_ca_dir
    assert stat.S_IMODE((ca_dir / "ca-1.pem").stat().st_mode) == 0o600
    shown = cli("admin", "ssh-ca", "show").stdout
    assert first[0]["fingerprint"] in shown
    assert first[0]["public_key"] in shown.splitlines()  # a line to paste as it is

    done = cli("admin", "ssh-ca", "rotate", "--overlap-days", "3")
    assert "Added CA key 2" in done.stderr
    after = cli.json("admin", "ssh-ca", "show", "--json")
    assert [(k["generation"], k["state"]) for k in after] == [(1, "signing"), (2, "next")]
    assert after[0]["listed_until"] is not None
    again = cli("admin", "ssh-ca", "rotate", code=2)
    assert "a rotation is already under way" in again.stderr
    # The revocation list: one section per listed key (ssh-keygen reads it back).
    krl = tmp_path / "revoked.krl"
    assert "0 user(s) revoked" in cli("admin", "ssh-ca", "krl", "-o", str(krl)).stderr
    key = tmp_path / "any.pub"
    key.write_text(after[0]["public_key"] + "\n")
    checked = subprocess.run(["ssh-keygen", "-Q", "-f", str(krl), str(key)],
                             capture_output=True, text=True)
    assert checked.returncode == 0 and ": ok" in checked.stdout, checked
