"""How the gateway reaches a site: its login node over SSH, and whose accounts run jobs."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from gateway.siteconfig.fields import FieldIssues, GatewayUser, Host, Loc, LocalUser, Port, Section
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


class Account(Section):
    """A Unix account on the site and the private key the gateway logs in with."""

    user: LocalUser
    key: KeyRef


class Accounts(Section):
    """Whose account runs a gateway user's jobs at this site."""

    mode: AccountMode = Field(
        description="community: one account runs everyone's jobs (the gateway isolates "
                    "them); mapped: each gateway user has their own account.")
    community: Account | None = Field(default=None, description="The account in community "
                                                                 "mode.")
    mapped: dict[GatewayUser, Account] = Field(
        default_factory=dict,
        description="mapped mode: gateway username -> account. Unmapped users cannot use "
                    "the site.")

    @model_validator(mode="after")
    def _fits_mode(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        if self.mode == AccountMode.COMMUNITY:
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
            owners: dict[str, str] = {}
            for gateway_user, account in self.mapped.items():
                if account.user in owners:
                    issues.append((("mapped", gateway_user, "user"),
                                   f"account {account.user!r} is already mapped to "
                                   f"{owners[account.user]!r}: each gateway user needs an "
                                   "account of their own (or use community mode)"))
                owners.setdefault(account.user, gateway_user)
        if issues:
            raise FieldIssues(issues)
        return self

    def account_for(self, gateway_user: str) -> Account | None:
        """The account that runs `gateway_user`'s jobs, or None if they have none here."""
        if self.mode == AccountMode.COMMUNITY:
            return self.community
        return self.mapped.get(gateway_user)
