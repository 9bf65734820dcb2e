"""`gridgate admin ssh-ca show|rotate` on the gateway host: the CA keys sites trust, as a
table with the TrustedUserCAKeys lines and as JSON; a rotation lists the next key at once
and a second one waits for it (issue 33)."""

from __future__ import annotations

import stat

from adapters.ssh.certificates import fingerprint
from tests.cli.helpers import Cli


def test_show_then_rotate(cli: Cli) -> None:
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
