"""Certificates for the sites where each researcher logs in as their own account (site
config `accounts.mode: certificate`): for each new connection, a key pair and a
certificate the gateway's CA signs (gateway.auth.ssh_ca, adapters.ssh.certificates).

The principal is the account the site's config maps the gateway user to, never anything a
request says. Before each signature the user is looked up again: a researcher who was
disabled, deleted, or (on a site that runs only some projects' jobs) removed from all of
those projects gets no certificate, so they lose access at the next connection, at most
one certificate lifetime after the change.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from adapters.errors import CredentialsRefused
from adapters.ssh.certificates import CertificatePolicy, UserCertificate, issue, key_id
from gateway.auth.ssh_ca import SshCa
from gateway.repositories.identity import projects, users
from gateway.siteconfig.access import Certificates

# What the connections are for: commands, and the SFTP/staging on the same connection.
PURPOSE = "commands"
# The status account's: every researcher's jobs' state and accounting.
STATUS_PURPOSE = "status"


class CertificateSigner:
    """Signs certificates for certificate sites; one per gateway process."""

    def __init__(self, ca: SshCa, sessions: sessionmaker[Session],
                 clock: Callable[[], datetime]) -> None:
        self.ca = ca
        self.sessions = sessions
        self.clock = clock

    def credentials(self, site: str, gateway_user: str, account: str, limits: Certificates,
                    projects: Collection[str] = ()) -> Callable[[], UserCertificate]:
        """What a connection to `site` as `account` calls for each new certificate
        (`projects`: the site runs only their jobs, and only their members log in)."""
        return self._signing(account, key_id(gateway_user, PURPOSE), limits,
                             lambda: self._check_allowed(site, gateway_user, projects))

    def status(self, account: str, limits: Certificates) -> Callable[[], UserCertificate]:
        """Certificates for the site's status account (site config
        `certificate.status_account`): no researcher's, so nobody's to refuse."""
        return self._signing(account, key_id("gridgate", STATUS_PURPOSE), limits)

    def stranger(self, limits: Certificates) -> Callable[[], UserCertificate]:
        """Certificates for a principal no account has (`gridgate site check` presents one
        for a real account, which the site must refuse)."""
        return self._signing(f"gridgate-probe-{secrets.token_hex(4)}",
                             key_id("site-check", "check"), limits)

    def _signing(self, principal: str, ident: str, limits: Certificates,
                 check: Callable[[], None] | None = None) -> Callable[[], UserCertificate]:
        policy = _policy(limits)

        def sign() -> UserCertificate:
            if check is not None:
                check()
            now = self.clock()
            _, private = self.ca.signer(now)
            return issue(private, principal, ident, policy, now)

        return sign

    def _check_allowed(self, site: str, gateway_user: str, names: Collection[str]) -> None:
        with self.sessions() as session:
            disabled = users.disabled(session, gateway_user)
            member = not names or projects.member_of_any(session, gateway_user, names)
        if disabled is None or disabled:
            state = "disabled" if disabled else "unknown"
            raise CredentialsRefused(
                f"no certificate for gateway user {gateway_user!r} at {site}: the user is "
                f"{state} here")
        if not member:
            raise CredentialsRefused(
                f"no certificate for gateway user {gateway_user!r} at {site}: not a member "
                f"of any project the site runs jobs of ({', '.join(sorted(names))})")


def _policy(limits: Certificates) -> CertificatePolicy:
    return CertificatePolicy(tuple(limits.source_addresses),
                             timedelta(seconds=limits.lifetime_seconds))


def revoked_key_ids(session: Session) -> list[str]:
    """The key ids of every disabled user's certificates (for the CA's revocation list)."""
    return sorted(key_id(name, PURPOSE) for name in users.disabled_usernames(session))
