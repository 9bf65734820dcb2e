"""At submission: whether a job's `notify` can be honoured, and to which address."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from gateway.domain.errors import Invalid
from gateway.domain.notify import KINDS, Notify
from gateway.repositories import mail as repo
from gateway.settings import Settings


@dataclass(frozen=True)
class MailPolicy:
    """What the administrator set up: whether a relay sends mail at all, and domains any
    user may have mail sent to (lower case)."""

    enabled: bool
    domains: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> MailPolicy:
        domains = (d.strip().lower() for d in settings.mail_domains.split(","))
        return cls(settings.smtp_host is not None, frozenset(d for d in domains if d))


OFF = MailPolicy(False)


@dataclass(frozen=True)
class MailAsk:
    """Mail a new job asked for: the kinds (comma-separated, in order) and the address."""

    kinds: str
    address: str


def resolve(session: Session, policy: MailPolicy, user_id: str, notify: Notify | None
            ) -> MailAsk | None:
    """The mail a new job asked for, or None; Invalid (a 422) when the gateway sends no
    mail or the address is not one it knows is the user's."""
    if notify is None or not notify.mail:
        return None
    if not policy.enabled:
        raise Invalid("This gateway sends no mail (its administrator configured no SMTP "
                      "relay); drop 'notify.mail' from the job.", field="notify.mail")
    own = repo.user_email(session.connection(), user_id)
    address = notify.to or own
    if address is None:
        allowed = _domains(policy)
        raise Invalid("Your identity provider gave no verified mail address, so there is "
                      "nowhere to send mail by default; give one in 'notify.to'"
                      + (f" (in {allowed})." if allowed else
                         ", or sign in through a provider that gives a verified address."),
                      field="notify.to")
    domain = address.rpartition("@")[2].lower()
    if (own is None or address.lower() != own.lower()) and domain not in policy.domains:
        yours = f"your verified address is {own}" if own else "you have no verified address"
        allowed = _domains(policy)
        raise Invalid(f"Mail can go only to an address the gateway knows is yours: "
                      f"{yours}{f', or any address in {allowed}' if allowed else ''}; "
                      f"{address!r} is neither. Give that in 'notify.to', or leave it out.",
                      field="notify.to", allowed=[own] if own else [])
    kinds = ",".join(kind.value for kind in KINDS if kind in notify.kinds)
    return MailAsk(kinds, address)


def record(session: Session, job_ids: Sequence[str], ask: MailAsk | None) -> None:
    """Remember the mail the new jobs asked for (the worker's mail step reads it)."""
    if ask is not None and job_ids:
        repo.add_requests(session, job_ids, ask.address, ask.kinds)


def _domains(policy: MailPolicy) -> str:
    return ", ".join(f"@{d}" for d in sorted(policy.domains))
