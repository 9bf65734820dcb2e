"""Appending to the audit chain on PostgreSQL in one round trip.

The append happens at every commit that changed something (every submission), so its
round trips are what the chain costs; three (lock the head, insert, move the head) cost
a submission more than half its rate. Here one statement locks the head row, hashes each
event after the one before it with the server's sha256 (over the canonical text made
here by `gateway.accounting.audit_chain`, so the links are the same as anywhere else),
inserts the events and moves the head.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.sql.elements import TextClause

from gateway.accounting.audit_chain import as_json, canonical


def write(conn: Connection, events: Sequence[tuple[datetime, str, str, str, Any]],
          head_id: int) -> bool:
    """Chain and insert `events` ((at, kind, subject, actor, data) each); False (nothing
    written) when the head row does not exist yet."""
    params: dict[str, Any] = {"head": head_id}
    for k, (at, kind, subject, actor, data) in enumerate(events, 1):
        stored = as_json(data)
        params.update({f"at{k}": at, f"kind{k}": kind, f"subject{k}": subject,
                       f"actor{k}": actor, f"data{k}": json.dumps(stored),
                       f"c{k}": canonical(at, kind, subject, actor, stored).decode()})
    return conn.execute(_statement(len(events)), params).first() is not None


@cache
def _statement(n: int) -> TextClause:
    """The statement for a batch of `n` events (built once per n). Only the integers k
    and n are formatted into it (hence the noqa: S608); every value is a bind parameter."""
    # h0 locks the head; hk hashes event k after h(k-1). FOR UPDATE waits for a concurrent
    # appender and then reads the row as it committed it (READ COMMITTED re-check).
    links = ["h0 AS (SELECT last_hash AS hash FROM audit_head WHERE id = :head FOR UPDATE)"]
    links += [f"h{k} AS (SELECT h{k - 1}.hash AS prev, encode(sha256(convert_to("  # noqa: S608
              f"h{k - 1}.hash || :c{k}, 'UTF8')), 'hex') AS hash FROM h{k - 1})"
              for k in range(1, n + 1)]
    rows = " UNION ALL ".join(
        f"SELECT {k} AS n, CAST(:at{k} AS timestamptz) AS at, "  # noqa: S608
        f"CAST(:kind{k} AS varchar) AS kind, CAST(:subject{k} AS varchar) AS subject, "
        f"CAST(:actor{k} AS varchar) AS actor, CAST(:data{k} AS json) AS data, "
        f"h{k}.prev, h{k}.hash FROM h{k}" for k in range(1, n + 1))
    # Inserted in chain order, so ids grow along the chain.
    inserted = (
        "ins AS (INSERT INTO audit_events (at, kind, subject, actor, data, prev_hash, hash) "  # noqa: S608
        f"SELECT at, kind, subject, actor, data, prev, hash FROM ({rows}) AS e "
        "ORDER BY n RETURNING id)")
    moved = ("UPDATE audit_head SET last_id = (SELECT max(id) FROM ins), "  # noqa: S608
             f"last_hash = (SELECT hash FROM h{n}) WHERE id = :head RETURNING last_id")
    return text(f"WITH {', '.join([*links, inserted])} {moved}")
