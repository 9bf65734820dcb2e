"""Certificate sites (issue 33): `accounts.mode: certificate` in a site config, and the
gateway logging each researcher in as their own account with certificates its CA signs,
against a real sshd that trusts that CA and nothing else (tests/ssh/sshd.py).

The principal comes from the site's mapping only; a disabled researcher, or one removed
from every project a site runs jobs of, gets no certificate (at the next connection);
`site check` logs in with a certificate and finds a certificate for another principal
refused."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from adapters.batch.adapter import BatchAdapter
from adapters.errors import AuthenticationFailed, CredentialsRefused
from adapters.ssh import SshTransport, SshTransportPool
from adapters.ssh.certificates import CertificatePolicy, issue, key_id
from gateway.auth.accounts import create_local_user
from gateway.auth.ssh_ca import SshCa
from gateway.db.engine import transaction
from gateway.db.models import Project, User
from gateway.repositories.identity import projects, users
from gateway.runtime import Runtime, build_runtime
from gateway.services.sites.certificates import CertificateSigner, revoked_key_ids
from gateway.services.sites.check import check_site
from gateway.services.sites.check_report import Status
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.remote import remote_site
from gateway.settings import Settings
from gateway.siteconfig import (
    SiteConfig,
    SiteConfigError,
    load_site_config,
    site_config_data,
    validate_site_config,
)
from tests.ssh.conftest import target_for
from tests.ssh.sshd import Sshd, ensure_user, start_sshd

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"
LIMITS = {"lifetime_seconds": 300, "source_addresses": ["127.0.0.1/32"]}
STATUS_ACCOUNT = "gwstatus"


def _certificate_config(accounts: dict[str, Any], ssh: dict[str, Any] | None = None
                        ) -> SiteConfig:
    data = site_config_data(load_site_config(CONFIGS / "roadrunner.yaml"))
    data["name"] = "certsite"
    data["accounts"] = accounts
    if ssh:
        data["ssh"] = {**data["ssh"], **ssh}
    return validate_site_config(data, "<test>")


@pytest.mark.parametrize(("accounts", "problem"), [
    ({"mode": "certificate", "certificate": LIMITS}, "principals"),
    ({"mode": "certificate", "principals": {"alice": "alice"}}, "certificate"),
    ({"mode": "certificate", "principals": {"alice": "alice"}, "certificate": LIMITS,
      "community": {"user": "gwcomm", "key": {"secret": "k"}}}, "community"),
    ({"mode": "certificate", "principals": {"alice": "al", "bob": "al"},
      "certificate": LIMITS}, "already mapped"),
    ({"mode": "certificate", "principals": {"alice": "root;id"}, "certificate": LIMITS},
     "Unix account name"),
    ({"mode": "certificate", "principals": {"alice": "alice"},
      "certificate": {"source_addresses": ["anywhere"]}}, "not an IP address"),
    ({"mode": "certificate", "principals": {"alice": "alice"},
      "certificate": {"source_addresses": []}}, "source_addresses"),
    ({"mode": "certificate", "principals": {"alice": "alice"},
      "certificate": {**LIMITS, "lifetime_seconds": 5}}, "lifetime_seconds"),
    ({"mode": "certificate", "principals": {"alice": "alice"},
      "certificate": {**LIMITS, "status_account": "alice"}}, "is a researcher's"),
    ({"mode": "community", "community": {"user": "gwcomm", "key": {"secret": "k"}},
      "principals": {"alice": "alice"}}, "only used in certificate mode"),
])
def test_a_certificate_site_config_says_what_is_wrong(accounts: dict[str, Any],
                                                      problem: str) -> None:
    with pytest.raises(SiteConfigError, match=problem):
        _certificate_config(accounts)


@dataclass
class Gateway:
    runtime: Runtime
    server: Sshd
    config: SiteConfig
    entry: SiteEntry
    signer: CertificateSigner


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway (SQLite) whose site `certsite` maps alice to the sshd's account and bob
    to another; the sshd trusts the gateway's CA and lists each account's own name."""
    settings = Settings(data_dir=tmp_path / "data", database_url=f"sqlite:///{tmp_path}/gw.db",
                        run_worker=False, local_site_enabled=False,
                        public_url="http://gateway.test")
    runtime = build_runtime(settings)
    with transaction(runtime.sessions) as session:
        create_local_user(session, "alice", "correct horse battery")
        bob = create_local_user(session, "bob", "correct horse battery")
        bob.disabled = True
    ca = SshCa(settings.ssh_ca_dir)
    files = Path(tempfile.mkdtemp(prefix="gw-ca-site-"))  # sshd reads it as the account
    files.chmod(0o755)
    trusted = files / "trusted"
    trusted.write_text("".join(f"{k.line}\n" for k in ca.trusted(runtime.clock())))
    ensure_user(STATUS_ACCOUNT)  # the status account, for the tests that give one
    server = start_sshd(extra_config=["AuthorizedKeysFile none",
                                      f"TrustedUserCAKeys {trusted}",
                                      f"AllowUsers {STATUS_ACCOUNT}"])
    config = _certificate_config(
        {"mode": "certificate", "principals": {"alice": server.user, "bob": "gwbob"},
         "certificate": LIMITS},
        {"host": "127.0.0.1", "port": server.port, "host_keys": [server.host_key_line]})
    signer = CertificateSigner(ca, runtime.sessions, runtime.clock)
    pool = SshTransportPool()
    try:
        yield Gateway(runtime, server, config, remote_site(config, settings, pool, signer),
                      signer)
    finally:
        pool.close()
        runtime.close()
        server.cleanup()
        shutil.rmtree(files)


def _transport(entry: SiteEntry, user: str) -> SshTransport:
    adapter = entry.adapter_for(user)
    assert isinstance(adapter, BatchAdapter) and isinstance(adapter.transport, SshTransport)
    return adapter.transport


def test_each_researcher_logs_in_as_their_account_and_loses_it_when_disabled(
        gateway: Gateway) -> None:
    alice = _transport(gateway.entry, "alice")
    assert alice.run(["id", "-un"]).stdout.decode().strip() == gateway.server.user
    assert "ID gridgate:alice:commands" in gateway.server.log()
    assert gateway.entry.account_name("alice") == gateway.server.user
    with pytest.raises(CredentialsRefused, match="'bob' at certsite: the user is disabled"):
        _transport(gateway.entry, "bob").run(["true"])
    # Disabled now: the open connection ends with its certificate; the next one is refused.
    with transaction(gateway.runtime.sessions) as session:
        session.execute(update(User).where(User.username == "alice").values(disabled=True))
    alice.disconnect()
    with pytest.raises(AuthenticationFailed, match="disabled"):
        alice.run(["true"])


def test_a_site_of_some_projects_signs_only_for_their_members(gateway: Gateway) -> None:
    """Removed from the site's only project, alice gets no certificate at her next
    connection; added again, she logs in again."""
    config = _certificate_config(
        {**site_config_data(gateway.config)["accounts"], "projects": ["climate"]},
        {"host": "127.0.0.1", "port": gateway.server.port,
         "host_keys": [gateway.server.host_key_line]})
    with transaction(gateway.runtime.sessions) as session:
        alice_id = users.id_by_username(session, "alice")
        assert alice_id is not None
        climate = Project(name="climate")
        projects.add(session, climate)
        session.flush()
        projects.add_member(session, climate.id, alice_id, "member")
    pool = SshTransportPool()
    try:
        entry = remote_site(config, gateway.runtime.settings, pool, gateway.signer)
        assert entry.takes("climate") and not entry.takes("other")
        alice = _transport(entry, "alice")
        assert alice.run(["id", "-un"]).stdout.decode().strip() == gateway.server.user
        with transaction(gateway.runtime.sessions) as session:
            membership = projects.membership(session, climate.id, alice_id)
            assert membership is not None
            projects.remove_member(session, membership)
        alice.disconnect()
        with pytest.raises(CredentialsRefused, match=r"not a member of any project the "
                                                     r"site runs jobs of \(climate\)"):
            alice.run(["true"])
        with transaction(gateway.runtime.sessions) as session:
            projects.add_member(session, climate.id, alice_id, "member")
        assert alice.run(["true"]).exit_status == 0
    finally:
        pool.close()


def test_the_status_account_logs_in_with_a_certificate_of_its_own(gateway: Gateway) -> None:
    """`certificate.status_account`: the site's status account, asked about everyone's
    jobs, logs in with certificates naming no researcher; researchers' commands still go
    to their own accounts."""
    config = _certificate_config(
        {**site_config_data(gateway.config)["accounts"],
         "certificate": {**LIMITS, "status_account": STATUS_ACCOUNT}},
        {"host": "127.0.0.1", "port": gateway.server.port,
         "host_keys": [gateway.server.host_key_line]})
    pool = SshTransportPool()
    try:
        entry = remote_site(config, gateway.runtime.settings, pool, gateway.signer)
        assert entry.status is not None and entry.adapter is entry.status
        assert entry.follower_for("alice") is entry.status
        assert entry.adapter_for("alice") is not entry.status
        status = entry.status
        assert isinstance(status, BatchAdapter) and isinstance(status.transport, SshTransport)
        assert status.transport.run(["id", "-un"]).stdout.decode().strip() == STATUS_ACCOUNT
        assert "ID gridgate:gridgate:status" in gateway.server.log()
        report = check_site(config, gateway.runtime.settings, signer=gateway.signer)
        checks = {check.name: check for check in report.checks}
        assert checks["status-account"].status == Status.OK, checks["status-account"]
    finally:
        pool.close()


def test_site_check_logs_in_with_a_certificate_and_finds_a_stranger_refused(
        gateway: Gateway) -> None:
    report = check_site(gateway.config, gateway.runtime.settings, signer=gateway.signer)
    checks = {check.name: check for check in report.checks}
    assert checks["ssh"].status == Status.OK, checks["ssh"]
    assert checks["certificate-principal"].status == Status.OK, checks["certificate-principal"]
    assert report.account == gateway.server.user


def test_site_check_fails_a_site_that_takes_another_principal(
        gateway: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    """A site whose principals file lets gwtest in on the probe's principal as well."""
    monkeypatch.setattr(secrets, "token_hex", lambda _: "0badc0de")
    server = gateway.server
    principals = server.root / "principals"
    principals.write_text(f"{server.user}\ngridgate-probe-0badc0de\n")
    principals.chmod(0o644)
    server.stop()
    server.extra_config.append(f"AuthorizedPrincipalsFile {principals}")
    server.start()
    report = check_site(gateway.config, gateway.runtime.settings, signer=gateway.signer)
    check = next(c for c in report.checks if c.name == "certificate-principal")
    assert check.status == Status.FAIL
    assert "another principal" in check.detail


def test_a_disabled_users_certificates_are_on_the_revocation_list(
        gateway: Gateway, tmp_path: Path) -> None:
    """A certificate bob got before he was disabled (still valid) is refused by a site that
    loads the CA's revocation list; alice's are not. Read back by `ssh-keygen -Q` too."""
    with gateway.runtime.sessions() as session:
        revoked = revoked_key_ids(session)
    assert revoked == ["gridgate:bob:commands"]
    ca = SshCa(gateway.runtime.settings.ssh_ca_dir)
    krl = gateway.server.root / "revoked.krl"
    krl.write_bytes(ca.revocation_list(gateway.runtime.clock(), revoked))
    krl.chmod(0o644)
    _, private = ca.signer(gateway.runtime.clock())
    stolen = issue(private, gateway.server.user, key_id("bob", "commands"),
                   CertificatePolicy(("127.0.0.1/32",)), gateway.runtime.clock())
    cert_file = tmp_path / "bob-cert.pub"
    cert_file.write_text(stolen.certificate + "\n")
    queried = subprocess.run(["ssh-keygen", "-Q", "-f", str(krl), str(cert_file)],
                             capture_output=True, text=True)
    assert "REVOKED" in queried.stdout, (queried.stdout, queried.stderr)
    server = gateway.server
    server.stop()
    server.extra_config.append(f"RevokedKeys {krl}")
    server.start()
    with pytest.raises(AuthenticationFailed):
        SshTransport(target_for(server, key_path=None, credentials=lambda: stolen)).run(["true"])
    assert _transport(gateway.entry, "alice").run(["id", "-un"]).stdout.decode().strip() == (
        server.user)
