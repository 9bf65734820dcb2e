"""A real SMTP server for the mail tests: aiosmtpd's Controller on a loopback port,
recording every message it accepts (envelope recipients and the parsed message)."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller


@dataclass(frozen=True)
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


@dataclass
class Recorder:
    """The aiosmtpd handler: keeps what it is given, in order."""

    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Recipients refused for good (550), as a relay refuses an unknown mailbox.
    refuse: set[str] = field(default_factory=set)

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: list[str]) -> str:
        if address in self.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.original_content,
                                           policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        with self.lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos),
                                          message))
        return "250 OK"

    @property
    def messages(self) -> list[EmailMessage]:
        with self.lock:
            return [r.message for r in self.received]

    @property
    def subjects(self) -> list[str]:
        return [str(m["Subject"]) for m in self.messages]


@dataclass
class SmtpServer:
    host: str
    port: int
    recorder: Recorder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def smtp_server() -> Iterator[SmtpServer]:
    recorder = Recorder()
    controller = Controller(recorder, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield SmtpServer("127.0.0.1", controller.port, recorder)
    finally:
        controller.stop()
