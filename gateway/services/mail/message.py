"""One job mail, as Slurm words it: the subject says the job, what happened and how long
it took; the body the rest, and the command that shows the job.

The job's name is the user's text: it goes into the Subject only, its control characters
(line breaks among them) made spaces, and encoded by the email library (RFC 2047), so no
name can add a header or a line to the message.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

from gateway.domain.notify import MailType
from gateway.repositories.mail import Facts

_VERB = {MailType.BEGIN: "Began", MailType.END: "Ended", MailType.FAIL: "Failed"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Characters of the job's name a subject carries.
NAME_MAX = 80


def message_id(job_id: str, kind: MailType, mail_from: str) -> str:
    """The Message-ID of the job's mail of `kind`: the same every time it is sent, so a
    resend after a crash is recognisably the same mail."""
    domain = mail_from.rpartition("@")[2] or "gridgate"
    return f"<job-{job_id}.{kind.value}@{domain}>"


def compose(facts: Facts, kind: MailType, mail_from: str, now: datetime) -> EmailMessage:
    """The mail of `kind` about the change `facts` reports."""
    msg = EmailMessage()
    msg["From"] = mail_from
    msg["To"] = facts.address
    msg["Date"] = format_datetime(now.astimezone(UTC))
    msg["Message-ID"] = message_id(facts.job_id, kind, mail_from)
    msg["Subject"] = subject(facts, kind)
    msg.set_content(body(facts, kind))
    return msg


def subject(facts: Facts, kind: MailType) -> str:
    """`gridgate job ID (NAME) Ended, COMPLETED, run time 0:01:02, exit code 0`."""
    name = _CONTROL.sub(" ", facts.name)
    if len(name) > NAME_MAX:
        name = name[:NAME_MAX - 1] + "…"
    parts = [f"gridgate job {facts.job_id} ({name}) {_VERB[kind]}", facts.event_state]
    if kind is MailType.BEGIN:
        waited = _span(facts.created_at, facts.started_at or facts.event_at)
        parts.append(f"queued time {waited}")
    else:
        if facts.started_at is not None:
            parts.append(f"run time {_span(facts.started_at, facts.ended_at or facts.event_at)}")
        if facts.exit_code is not None:
            parts.append(f"exit code {facts.exit_code}")
    return ", ".join(parts)


def body(facts: Facts, kind: MailType) -> str:
    """The plain-text body: the change, the job's times, and how to see more."""
    what = {MailType.BEGIN: "started running", MailType.END: "ended",
            MailType.FAIL: "failed"}[kind]
    rows = [("state", facts.event_state), ("reason", facts.event_reason),
            ("site", facts.site), ("submitted", _at(facts.created_at)),
            ("started", _at(facts.started_at))]
    if kind is not MailType.BEGIN:
        rows += [("ended", _at(facts.ended_at or facts.event_at)),
                 ("exit code", None if facts.exit_code is None else str(facts.exit_code))]
    lines = [f"Job {facts.job_id} {what}.", ""]
    lines += [f"  {label + ':':<11} {value}" for label, value in rows if value is not None]
    lines += ["", "See it with:", f"  gridgate show {facts.job_id}", ""]
    return "\n".join(lines)


def _at(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(start: datetime, end: datetime) -> str:
    seconds = max(timedelta(0), _aware(end) - _aware(start)).total_seconds()
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    text = f"{rest // 3600}:{rest % 3600 // 60:02}:{rest % 60:02}"
    return f"{days}-{text}" if days else text


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
