"""Short-lived user certificates (issue 33) against a real sshd that trusts a CA
(`TrustedUserCAKeys`) and lists each account's principals (`AuthorizedPrincipalsFile`),
with no authorized keys at all: a certificate logs in as its principal and the sshd log
names who and why; a certificate for another principal, an expired or not yet valid one,
one from a CA the site no longer trusts and one used from another address are refused;
one that logs in gets no pty and no forwarding. What the certificate says is read back
by OpenSSH's own `ssh-keygen -L` as well as by adapters.ssh.certificates. A connection
due for renewal takes no new command, yet the one running on it finishes there; a
signature refused at renewal (a researcher disabled) fails the next command only."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from adapters.errors import AuthenticationFailed
from adapters.ssh import SshTransport
from adapters.ssh.certificates import (
    BACKDATE,
    CertificateError,
    CertificatePolicy,
    UserCertificate,
    fingerprint,
    issue,
    key_id,
    public_line,
    read,
)
from tests.ssh.conftest import target_for, wait_for
from tests.ssh.sshd import Sshd, start_sshd

LOOPBACK = CertificatePolicy(("127.0.0.1/32",))


@dataclass
class CaSite:
    """An sshd that trusts `ca` (and `previous`, as during a rotation) and nothing else."""

    server: Sshd
    ca: Ed25519PrivateKey
    previous: Ed25519PrivateKey


@pytest.fixture(scope="module")
def site() -> Iterator[CaSite]:
    ca, previous = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    # sshd reads the principals as the account: not under pytest's 0700 directory.
    files = Path(tempfile.mkdtemp(prefix="gw-ca-site-"))
    files.chmod(0o755)
    trusted = files / "trusted_user_ca_keys"
    trusted.write_text(f"{public_line(ca, 'current')}\n{public_line(previous, 'previous')}\n")
    principals = files / "principals"
    principals.mkdir(mode=0o755)
    server = start_sshd(extra_config=[
        "AuthorizedKeysFile none",  # certificates only (sshd takes a keyword's first value)
        f"TrustedUserCAKeys {trusted}",
        f"AuthorizedPrincipalsFile {principals}/%u",
    ])
    (principals / server.user).write_text(f"{server.user}\n")
    (principals / server.user).chmod(0o644)
    try:
        yield CaSite(server, ca, previous)
    finally:
        server.cleanup()
        shutil.rmtree(files)


def _now() -> datetime:
    return datetime.now(UTC)


def _transport(site: CaSite, credentials: Callable[[], UserCertificate],
               **overrides: Any) -> SshTransport:
    return SshTransport(target_for(site.server, key_path=None, credentials=credentials,
                                   **overrides))


def _login(site: CaSite, cert: UserCertificate) -> str:
    """`id -un` over a transport that logs in with `cert`; the account it ran as."""
    transport = _transport(site, lambda: cert)
    try:
        return transport.run(["id", "-un"]).stdout.decode().strip()
    finally:
        transport.close()


def test_a_certificate_logs_in_as_its_principal_and_the_log_says_who_and_why(
        site: CaSite) -> None:
    user = site.server.user
    cert = issue(site.ca, user, key_id("alice@example.org", "commands"), LOOPBACK, _now())
    assert _login(site, cert) == user
    accepted = [line for line in site.server.log().splitlines()
                if "Accepted publickey" in line and f"serial {cert.serial}" in line]
    assert len(accepted) == 1, site.server.log()[-2000:]
    assert "ID gridgate:alice@example.org:commands" in accepted[0]
    # The CA being rotated out still works until the site drops it.
    during = issue(site.previous, user, key_id("alice@example.org", "commands"), LOOPBACK,
                   _now())
    assert _login(site, during) == user


def test_a_plain_key_is_refused_where_only_certificates_count(site: CaSite) -> None:
    with pytest.raises(AuthenticationFailed, match="refused the key"):
        SshTransport(target_for(site.server)).run(["true"])


def test_what_the_certificate_says_reads_back_the_same_in_openssh(
        site: CaSite, tmp_path: Path) -> None:
    now = _now().replace(microsecond=0)
    cert = issue(site.ca, "gwtest", key_id("bob smith,x", "staging"), LOOPBACK, now)
    facts = read(cert.certificate)
    assert facts.principals == ("gwtest",)
    assert facts.key_id == "gridgate:bob%20smith%2Cx:staging"  # no space or comma in logs
    assert facts.valid_after == now - BACKDATE
    assert facts.valid_before == now + timedelta(minutes=5) == cert.valid_before
    assert facts.critical_options == {"source-address": "127.0.0.1/32"}
    assert facts.extensions == ()
    assert facts.signed_by == public_line(site.ca)
    path = tmp_path / "cert.pub"
    path.write_text(cert.certificate + "\n")
    shown = subprocess.run(["ssh-keygen", "-L", "-f", str(path)], capture_output=True,
                           text=True, check=True).stdout
    assert "Type: ssh-ed25519-cert-v01@openssh.com user certificate" in shown
    assert 'Key ID: "gridgate:bob%20smith%2Cx:staging"' in shown
    assert f"Serial: {cert.serial}" in shown
    assert f"Signing CA: ED25519 {fingerprint(public_line(site.ca))}" in shown
    lines = [line.strip() for line in shown.splitlines()]
    assert lines[lines.index("Principals:") + 1] == "gwtest"
    assert lines[lines.index("Critical Options:") + 1] == "source-address 127.0.0.1/32"
    assert "Extensions: (none)" in lines


def _refused(site: CaSite, cert: UserCertificate, because: str) -> None:
    """`cert` does not log in, and sshd's log says `because` and names the certificate."""
    before = site.server.log()
    with pytest.raises(AuthenticationFailed):
        _login(site, cert)
    said = site.server.log()[len(before):]
    assert because in said, said
    assert f"ID {cert.key_id} (serial {cert.serial})" in said, said


def test_a_certificate_for_another_account_is_refused(site: CaSite) -> None:
    cert = issue(site.ca, "gwother", key_id("mallory", "commands"), LOOPBACK, _now())
    _refused(site, cert, "Certificate does not contain an authorized principal")


def test_an_expired_or_not_yet_valid_certificate_is_refused(site: CaSite) -> None:
    ident = key_id("alice", "commands")
    _refused(site, issue(site.ca, "gwtest", ident, LOOPBACK, _now() - timedelta(hours=1)),
             "expired")
    _refused(site, issue(site.ca, "gwtest", ident, LOOPBACK, _now() + timedelta(hours=1)),
             "not yet valid")


def test_a_certificate_from_a_ca_the_site_dropped_is_refused(site: CaSite) -> None:
    retired = Ed25519PrivateKey.generate()
    _refused(site, issue(retired, "gwtest", key_id("alice", "commands"), LOOPBACK, _now()),
             f"CA ED25519 {fingerprint(public_line(retired))}")


def test_a_certificate_used_from_another_address_is_refused(site: CaSite) -> None:
    elsewhere = CertificatePolicy(("192.0.2.0/24",))
    _refused(site, issue(site.ca, "gwtest", key_id("alice", "commands"), elsewhere, _now()),
             "not from a permitted source address")


def test_a_certificate_grants_no_pty_and_no_forwarding(site: CaSite, tmp_path: Path) -> None:
    """Through OpenSSH's own client: a pty and a forwarded connection are both refused."""
    cert = issue(site.ca, "gwtest", key_id("alice", "commands"), LOOPBACK, _now())
    key = tmp_path / "id_ed25519"
    key.write_bytes(cert.private_key)
    key.chmod(0o600)
    Path(f"{key}-cert.pub").write_text(cert.certificate + "\n")
    server = site.server
    base = ["ssh", *server.ssh_options(), "-i", str(key),
            "-o", f"CertificateFile={key}-cert.pub"]
    tty = subprocess.run([*base, "-tt", server.destination, "tty"], capture_output=True,
                         text=True, timeout=30)
    assert "PTY allocation request failed" in tty.stderr, (tty.stdout, tty.stderr)
    forward = subprocess.run([*base, "-W", f"127.0.0.1:{server.port}", server.destination],
                             capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL)
    assert forward.returncode != 0
    assert "stdio forwarding failed" in forward.stderr, forward.stderr
    # The sshd allows forwarding (AllowTcpForwarding yes): the certificate refused it.
    assert "refused local port forward" in server.log()


@pytest.mark.parametrize(("principal", "purpose", "blocks", "lifetime"), [
    ("root;id", "commands", ("127.0.0.1/32",), timedelta(minutes=5)),
    ("gwtest\n", "commands", ("127.0.0.1/32",), timedelta(minutes=5)),
    ("gwtest", "Commands!", ("127.0.0.1/32",), timedelta(minutes=5)),
    ("gwtest", "commands", (), timedelta(minutes=5)),
    ("gwtest", "commands", ("not-an-address",), timedelta(minutes=5)),
    ("gwtest", "commands", ("127.0.0.1/32",), timedelta(days=2)),
])
def test_what_must_not_be_signed_is_refused_before_signing(
        principal: str, purpose: str, blocks: tuple[str, ...], lifetime: timedelta) -> None:
    with pytest.raises(CertificateError):
        issue(Ed25519PrivateKey.generate(), principal, key_id("alice", purpose),
              CertificatePolicy(blocks, lifetime), _now())


class Signer:
    """Signs a new certificate for each connection, until told to refuse."""

    def __init__(self, site: CaSite) -> None:
        self.site = site
        self.issued: list[UserCertificate] = []
        self.refuse = False

    def __call__(self) -> UserCertificate:
        if self.refuse:
            raise AuthenticationFailed("gateway user 'alice' is disabled: no certificate")
        cert = issue(self.site.ca, self.site.server.user, key_id("alice", "commands"),
                     LOOPBACK, _now())
        self.issued.append(cert)
        return cert


def _held_command(transport: SshTransport, remote_dir: Path) -> tuple[threading.Thread,
                                                                     list[str]]:
    """A command that says it started, then runs until the test writes `go`."""
    out: list[str] = []
    script = (f'touch {remote_dir}/started; while [ ! -e {remote_dir}/go ]; do sleep 0.05; '
              'done; echo first')

    def run() -> None:
        out.append(transport.run(["sh", "-c", script], timeout=60).stdout.decode().strip())

    thread = threading.Thread(target=run)
    thread.start()
    wait_for("the held command to start", (remote_dir / "started").exists)
    return thread, out


def test_a_connection_due_for_renewal_takes_new_commands_to_a_new_one(
        site: CaSite, remote_dir: Path) -> None:
    # Renewed as soon as used: due `renew_before` (longer than the lifetime) before expiry.
    signer = Signer(site)
    transport = _transport(site, signer, renew_before=3600.0)
    try:
        held, out = _held_command(transport, remote_dir)
        assert transport.run(["echo", "second"]).stdout == b"second\n"
        assert transport.connects == 2 and len(signer.issued) == 2
        assert signer.issued[0].serial != signer.issued[1].serial
        assert transport.connection.retired == 1  # still running the held command
        (remote_dir / "go").touch()
        held.join(timeout=30)
        assert out == ["first"]
        wait_for("the retired connection to close", lambda: transport.connection.retired == 0)
        log = site.server.log()
        for cert in signer.issued:
            assert f"ID {cert.key_id} (serial {cert.serial})" in log
    finally:
        transport.close()


def test_a_certificate_refused_at_renewal_fails_the_next_command_only(
        site: CaSite, remote_dir: Path) -> None:
    signer = Signer(site)
    transport = _transport(site, signer, renew_before=3600.0)
    try:
        held, out = _held_command(transport, remote_dir)
        signer.refuse = True
        with pytest.raises(AuthenticationFailed, match="disabled"):
            transport.run(["echo", "second"])
        (remote_dir / "go").touch()
        held.join(timeout=30)
        assert out == ["first"]
    finally:
        transport.close()
