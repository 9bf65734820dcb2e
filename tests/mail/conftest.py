"""The mail tests' SMTP server fixture (tests/mail/smtp_server.py)."""

from tests.mail.smtp_server import smtp_server  # noqa: F401  (a fixture)
