"""How the gateway reaches a site: its login node over SSH, and whose accounts run jobs."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from adapters.ssh.certificates import source_address
from gateway.siteconfig.fields import (
    FieldIssues,
    GatewayUser,
    Host,
    Loc,
    LocalUser,
    Port,
    ProjectName,
    Section,
)
from gateway.siteconfig.keys import HostKeyLine, KeyRef, check_unique_host_keys

Timeout = Annotated[float, Field(gt=0, le=86_400)]


class JumpHost(Section):
    """A bastion the gateway connects through (like `ssh -J user@jump`)."""

    host: Host
    port: Port = 22
    user: LocalUser = Field(description="The account on the jump host.")
    key: KeyRef = Field(description="Private key for the jump host account.")
    host_keys: Annotated[list[HostKeyLine], AfterValidator(check_unique_host_keys)] = Field(
        default_factory=list, description="The jump host's pinned OpenSSH public host keys.")


class Ssh(Section):
    """How the gateway reaches the site's login node. Host keys are always pinned."""

    host: Host
    port: Port = 22
    host_keys: Annotated[list[HostKeyLine], AfterValidator(check_unique_host_keys)] = Field(
        default_factory=list,
        description="The login node's OpenSSH public host keys (lines of its "
                    "/etc/ssh/ssh_host_*_key.pub). Any other key is refused.")
    jump_host: JumpHost | None = None
    connect_timeout_seconds: Timeout = Field(
        default=10.0, description="Limit on TCP connect + SSH handshake + authentication.")
    command_timeout_seconds: Timeout = Field(
        default=60.0, description="Limit on any one remote command.")


class AccountMode(StrEnum):
    COMMUNITY = "community"
    MAPPED = "mapped"
    CERTIFICATE = "certificate"


class Account(Section):
    """A Unix account on the site and the private key the gateway logs in with."""

    user: LocalUser
    key: KeyRef


class Certificates(Section):
    """Limits on the short-lived certificates the gateway's CA signs for this site."""

    lifetime_seconds: int = Field(
        default=300, ge=30, le=86_400,
        description="How long a certificate is valid (5 minutes by default); a connection "
                    "takes new commands until a minute before (a fifth of a shorter "
                    "lifetime before).")
    source_addresses: list[Annotated[str, AfterValidator(source_address)]] = Field(
        min_length=1,
        description="The gateway's addresses as this site sees them (CIDR blocks): a "
                    "certificate used from anywhere else is refused (source-address).")
    status_account: LocalUser | None = Field(
        default=None,
        description="An account of the site's that sees every job's state and accounting "
                    "(Slurm: squeue and sacct --allusers show it every user's jobs; Grid "
                    "Engine: qstat -u '*' and qacct): the gateway asks it about every "
                    "researcher's jobs in one call per cycle, with certificates of its own "
                    "(key id gridgate:gridgate:status). Unset: each researcher's own account "
                    "is asked about their jobs.")

    @property
    def renew_before(self) -> float:
        """Seconds before a certificate expires that its connection takes no new commands:
        a minute, or a fifth of a short lifetime."""
        return min(60.0, self.lifetime_seconds / 5)


class Accounts(Section):
    """Whose account runs a gateway user's jobs at this site."""

    mode: AccountMode = Field(
        description="community: one account runs everyone's jobs (the gateway isolates "
                    "them); mapped: each gateway user has their own account, whose key "
                    "the gateway holds; certificate: each gateway user logs in as their "
                    "own account with a short-lived certificate the gateway's CA signs, "
                    "and no key is stored.")
    community: Account | None = Field(default=None, description="The account in community "
                                                                 "mode.")
    mapped: dict[GatewayUser, Account] = Field(
        default_factory=dict,
        description="mapped mode: gateway username -> account. Unmapped users cannot use "
                    "the site.")
    principals: dict[GatewayUser, LocalUser] = Field(
        default_factory=dict,
        description="certificate mode: gateway username -> the account at this site, the "
                    "one principal of their certificates. Unlisted users cannot use the "
                    "site.")
    certificate: Certificates | None = Field(
        default=None, description="certificate mode: the certificates' limits.")
    projects: list[ProjectName] = Field(
        default_factory=list,
        description="Only jobs charged to these gateway projects run here; in certificate "
                    "mode a researcher removed from all of them gets no new certificate. "
                    "Empty: every project.")

    @model_validator(mode="after")
    def _fits_mode(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        certificate = self.mode == AccountMode.CERTIFICATE
        for name, given in (("principals", bool(self.principals)),
                            ("certificate", self.certificate is not None)):
            if given and not certificate:
                issues.append(((name,), "only used in certificate mode: remove it, or set "
                                        "`mode: certificate`"))
        if certificate:
            if not self.principals:
                issues.append((("principals",), "certificate mode needs at least one entry "
                                                "`<gateway user>: <account>`"))
            if self.certificate is None:
                issues.append((("certificate",), "required in certificate mode: give at "
                                                 "least `source_addresses`"))
            for name, given in (("community", self.community is not None),
                                ("mapped", bool(self.mapped))):
                if given:
                    issues.append(((name,), "not used in certificate mode (no key is "
                                            "stored): remove it"))
            _each_account_once(self.principals, "principals", issues)
            status = self.certificate.status_account if self.certificate else None
            if status is not None and status in self.principals.values():
                issues.append((("certificate", "status_account"),
                               f"account {status!r} is a researcher's: give the status "
                               "calls an account of their own"))
        elif self.mode == AccountMode.COMMUNITY:
            if self.community is None:
                issues.append((("community",), "required in community mode: give `user` and "
                                            "`key`"))
            if self.mapped:
                issues.append((("mapped",), "only used in mapped mode: remove it, or set "
                                         "`mode: mapped`"))
        else:
            if not self.mapped:
                issues.append((("mapped",), "mapped mode needs at least one entry "
                                         "`<gateway user>: {user: ..., key: ...}`"))
            if self.community is not None:
                issues.append((("community",), "only used in community mode: remove it, or "
                                            "set `mode: community`"))
            _each_account_once({user: account.user for user, account in self.mapped.items()},
                               "mapped", issues)
        if issues:
            raise FieldIssues(issues)
        return self

    def accounts(self) -> dict[str, str]:
        """Gateway username -> the account that runs their jobs (mapped and certificate
        modes; "" -> the community account)."""
        if self.community is not None:
            return {"": self.community.user}
        if self.mode == AccountMode.CERTIFICATE:
            return dict(self.principals)
        return {user: account.user for user, account in self.mapped.items()}

    def account_for(self, gateway_user: str) -> Account | None:
        """The account that runs `gateway_user`'s jobs, or None if they have none here."""
        if self.mode == AccountMode.COMMUNITY:
            return self.community
        return self.mapped.get(gateway_user)


def _each_account_once(accounts: dict[str, str], section: str,
                       issues: list[tuple[Loc, str]]) -> None:
    """One account per gateway user: two users on one account could not be told apart."""
    owners: dict[str, str] = {}
    for gateway_user, account in accounts.items():
        if account in owners:
            where: Loc = ((section, gateway_user, "user") if section == "mapped"
                          else (section, gateway_user))
            issues.append((where, f"account {account!r} is already mapped to "
                                  f"{owners[account]!r}: each gateway user needs an account "
                                  "of their own (or use community mode)"))
        owners.setdefault(account, gateway_user)
