"""The mail step's pass over the `events` outbox: every state change of a job that asked
for mail becomes at most one mail of each kind, sent at least once.

How no mail is lost or sent twice, with any number of workers on one database:

- A mail is claimed before it is sent: a `mail_sent` row per (job, kind), inserted (or
  taken over once its lease ran out) under a lease, committed before anything is sent.
  Two workers cannot both claim it: the insert conflicts on the key, the takeover is a
  conditional update.
- It is recorded sent after the relay took it. A worker dying in between leaves the claim;
  once its lease runs out another worker sends the mail again, with the same Message-ID:
  at most one resend per crash, never a loss. (So is a pass slower than the lease: another
  worker may then send its last mails too.) A relay that refuses for now (4xx, or not
  reachable) gets the mail again after a back-off; one that refuses for good (5xx), or
  MAX_ATTEMPTS tries, ends it, the reason kept in `outcome`.
- The cursor (`mail_cursor`) is the highest event id read; each pass re-reads LOOKBACK ids
  below it, since ids are drawn at insert, not commit (gateway.services.events.feed):
  a change committed after up to LOOKBACK higher ids were read is still mailed. The claim
  makes re-reading harmless. Only events of jobs with a `mail_requests` row are read.
"""

from __future__ import annotations

import logging
import smtplib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.domain.notify import KINDS, MailType, kind_of
from gateway.domain.states import FINAL_STATES, JobState
from gateway.repositories import mail as repo
from gateway.services.mail.message import compose
from gateway.services.mail.relay import Refused, Relay

log = logging.getLogger(__name__)

# Ids below the cursor each pass reads again (late commits).
LOOKBACK = 1000
# Mails one pass claims at most.
BATCH = 100
# Tries before a mail the relay keeps refusing for now is given up (about a day).
MAX_ATTEMPTS = 30
# The first wait after a refusal for now; it doubles with each try, up to an hour.
RETRY_FIRST = timedelta(seconds=30)
RETRY_MAX = timedelta(hours=1)
_STATES = [JobState.RUNNING.value, *(s.value for s in FINAL_STATES)]
_ORDER = {kind: i for i, kind in enumerate(KINDS)}


@dataclass(frozen=True)
class Claimed:
    job_id: str
    kind: MailType
    event_id: int


@dataclass(frozen=True)
class MailPass:
    """What one pass needs: units of work, the relay, this worker's name for its leases,
    the lease, and the clock."""

    unit: Callable[[], AbstractContextManager[Session]]
    relay: Relay
    owner: str
    lease: timedelta
    now: Callable[[], datetime]

    def run(self) -> bool:
        """Claim the mails due, send them, record each. True when a full batch was
        claimed (more may be waiting)."""
        claimed = self.claim()
        if claimed:
            self.send(claimed)
        return len(claimed) >= BATCH

    def claim(self) -> list[Claimed]:
        """Read the outbox from the cursor (and the claims whose lease ran out), claim
        what is due, move the cursor; committed before any mail is sent."""
        now = self.now()
        until = now + self.lease
        with self.unit() as session:
            conn = session.connection()
            read = repo.cursor(conn)
            top = repo.last_event_id(conn)
            # Below the cursor: changes committed late (at most LOOKBACK ids, all read);
            # above it, new ones, a page at a time.
            late = repo.candidates(conn, max(0, read - LOOKBACK), read, _STATES, LOOKBACK)
            fresh = repo.candidates(conn, read, top, _STATES, BATCH)
            if len(fresh) == BATCH:
                top = fresh[-1].event_id
            wanted: dict[tuple[str, str], int] = {}
            for cand in late + fresh:
                for kind in _kinds(cand):
                    wanted.setdefault((cand.job_id, kind.value), cand.event_id)
            known = repo.known(conn, list({job for job, _ in wanted}))
            todo = {key: event_id for key, event_id in wanted.items() if key not in known}
            # Claimed before and not sent: a worker died, or the relay said "not now".
            todo.update({(job, kind): event_id for job, kind, event_id in
                         repo.due(conn, now, BATCH)})
            claimed = [Claimed(job, MailType(kind), event_id)
                       for (job, kind), event_id in todo.items()
                       if repo.claim(conn, job, kind, event_id, self.owner, now, until)]
            if top > read:
                repo.advance_cursor(conn, top)
        return sorted(claimed, key=lambda c: (c.event_id, _ORDER[c.kind]))

    def send(self, claimed: list[Claimed]) -> None:
        """Send the claimed mails through one connection; record each as it goes."""
        try:
            with self.relay.connect() as sender:
                for item in claimed:
                    with self.unit() as session:
                        facts = repo.facts(session.connection(), item.job_id, item.event_id)
                    if facts is None:  # the event is gone (never, but never mail nothing)
                        self._finish(item, "the event it reports no longer exists")
                        continue
                    msg = compose(facts, item.kind, self.relay.mail_from, self.now())
                    try:
                        sender.send(msg, facts.address)
                    except Refused as exc:
                        self._finish(item, str(exc))
                        continue
                    self._finish(item, None)
        except (OSError, smtplib.SMTPException) as exc:
            # The relay is not there or not taking mail now: these wait and go again.
            log.warning("mail relay %s:%s: %s", self.relay.host, self.relay.port, exc)
            self._retry_unsent(claimed, f"the relay did not take it: {exc}")

    def _finish(self, item: Claimed, outcome: str | None) -> None:
        with self.unit() as session:
            if not repo.finish(session.connection(), item.job_id, item.kind.value,
                               self.owner, self.now(), outcome):
                log.warning("mail %s/%s: lease lost before it was recorded",
                            item.job_id, item.kind.value)

    def _retry_unsent(self, claimed: list[Claimed], why: str) -> None:
        now = self.now()
        with self.unit() as session:
            conn = session.connection()
            for item in claimed:
                tries = repo.attempts(conn, item.job_id, item.kind.value)
                if tries >= MAX_ATTEMPTS:
                    repo.finish(conn, item.job_id, item.kind.value, self.owner, now,
                                f"given up after {tries} tries: {why}")
                else:
                    wait = min(RETRY_MAX, RETRY_FIRST * 2 ** (tries - 1))
                    repo.retry_at(conn, item.job_id, item.kind.value, self.owner,
                                  now + wait, why)


def _kinds(cand: repo.Candidate) -> list[MailType]:
    """The mails one state change calls for. A job seen only once it had ended (it ran
    between two polls) still gets its `begin` mail, first."""
    asked = frozenset(MailType(k) for k in cand.kinds.split(","))
    found = []
    if (cand.to_state != JobState.RUNNING and cand.started
            and MailType.BEGIN in asked):
        found.append(MailType.BEGIN)
    kind = kind_of(cand.to_state, cand.cancel_requested, asked)
    if kind is not None:
        found.append(kind)
    return found
