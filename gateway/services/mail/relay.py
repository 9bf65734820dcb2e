"""The SMTP relay the administrator configured: one connection per pass of the mail step,
STARTTLS and a login when the settings ask for them. The envelope recipient is given
explicitly, so only the job's address ever receives a mail, whatever its headers say."""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import EmailMessage

from gateway.settings import Settings

# Seconds one SMTP command may take before the pass gives up on the relay.
TIMEOUT = 30.0


class Refused(Exception):
    """The relay refused one mail for good (a 5xx answer): it is not tried again."""


@dataclass(frozen=True)
class Relay:
    host: str
    port: int
    starttls: bool
    username: str | None
    password: str | None
    mail_from: str

    @classmethod
    def from_settings(cls, settings: Settings) -> Relay | None:
        """The configured relay, or None: the gateway sends no mail."""
        if settings.smtp_host is None:
            return None
        password = settings.smtp_password
        return cls(settings.smtp_host, settings.smtp_port, settings.smtp_starttls,
                   settings.smtp_username,
                   None if password is None else password.get_secret_value(),
                   settings.mail_from)

    @contextmanager
    def connect(self) -> Iterator[Sender]:
        """A connection to the relay (OSError or smtplib.SMTPException: not now)."""
        with smtplib.SMTP(self.host, self.port, timeout=TIMEOUT) as smtp:
            if self.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if self.username is not None:
                smtp.login(self.username, self.password or "")
            yield Sender(smtp, self.mail_from)


@dataclass(frozen=True)
class Sender:
    smtp: smtplib.SMTP
    mail_from: str

    def send(self, msg: EmailMessage, to: str) -> None:
        """Hand `msg` to the relay for `to`; Refused for a permanent refusal, another
        smtplib.SMTPException or OSError for one that may pass later."""
        try:
            self.smtp.send_message(msg, from_addr=self.mail_from, to_addrs=[to])
        except smtplib.SMTPRecipientsRefused as exc:
            codes = [code for code, _ in exc.recipients.values()]
            if all(code >= 500 for code in codes):
                raise Refused(f"the relay refused {to}: {exc.recipients[to]!r}") from exc
            raise
        except smtplib.SMTPResponseException as exc:
            if exc.smtp_code >= 500:
                raise Refused(f"the relay refused the mail: {exc.smtp_code} "
                              f"{exc.smtp_error!r}") from exc
            raise
