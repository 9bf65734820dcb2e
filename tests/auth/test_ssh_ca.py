"""The gateway's SSH CA (gateway.auth.ssh_ca): made on first use, 0600 in a 0700
directory, the same key for every process that shares the data dir; a rotation lists the
next key at once, lets it sign only after the overlap, and keeps the old one listed until
what it signed has expired."""

from __future__ import annotations

import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.ssh.certificates import CertificatePolicy, issue, key_id, public_line, read
from gateway.auth.ssh_ca import RETIRE_AFTER, SshCa

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
POLICY = CertificatePolicy(("192.0.2.10/32",))


def _signed_by(ca: SshCa, at: datetime) -> str:
    _, private = ca.signer(at)
    return read(issue(private, "alice", key_id("alice", "commands"), POLICY, at)
                .certificate).signed_by


def test_made_once_private_and_shared(tmp_path: Path) -> None:
    directory = tmp_path / "data" / "ssh-ca"
    cas = [SshCa(directory) for _ in range(8)]
    found: list[int] = []
    threads = [threading.Thread(target=lambda ca=ca: found.append(ca.signer(NOW)[0].generation))
               for ca in cas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [1] * 8
    assert sorted(p.name for p in directory.glob("ca-*")) == ["ca-1.pem"]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "ca-1.pem").stat().st_mode) == 0o600
    assert _signed_by(cas[0], NOW) == _signed_by(SshCa(directory), NOW)


def test_a_rotation_lists_the_next_key_then_switches_then_retires_the_old(
        tmp_path: Path) -> None:
    ca = SshCa(tmp_path / "ssh-ca")
    old = public_line(ca.signer(NOW)[1])
    overlap = timedelta(days=7)
    assert ca.rotate(NOW, overlap).generation == 2
    listed = ca.trusted(NOW)
    assert [(k.generation, k.state) for k in listed] == [(1, "signing"), (2, "next")]
    assert listed[0].line.split()[:2] == old.split()
    new = " ".join(listed[1].line.split()[:2])
    assert listed[0].listed_until == NOW + overlap + RETIRE_AFTER
    assert _signed_by(ca, NOW + overlap - timedelta(seconds=1)) == old
    switch = NOW + overlap
    assert _signed_by(ca, switch) == new
    assert [k.state for k in ca.trusted(switch)] == ["retiring", "signing"]
    gone = switch + RETIRE_AFTER
    assert [(k.generation, k.state) for k in ca.trusted(gone)] == [(2, "signing")]
    with pytest.raises(ValueError, match="already under way"):
        ca.rotate(NOW + timedelta(days=1), overlap)
    assert ca.rotate(gone, timedelta(0)).generation == 3
    assert [(k.generation, k.state) for k in ca.trusted(gone)] == [(2, "retiring"),
                                                                    (3, "signing")]
