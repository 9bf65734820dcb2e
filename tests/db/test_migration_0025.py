"""Migration 0025 (the hash chain becomes a Merkle log) on SQLite and PostgreSQL: down, the
entries are chained again in their order; up, the chain is checked link by link and its
entries enter the tree in that order; a chain edited while it was one is not converted."""

from __future__ import annotations

import importlib
import itertools
import re

import pytest
from sqlalchemy import inspect, select, text

from gateway.db.audit_models import AuditEvent
from gateway.db.engine import transaction
from gateway.db.migrate import upgrade_database
from gateway.repositories.money import audit
from gateway.runtime import Runtime
from gateway.services.money import audit as audit_service
from gateway.worker.periodic.audit_sequencer import take_in
from tests.db.test_migration_0012 import _down_to
from tests.services.bank_fixtures import NOW

BELOW = importlib.import_module("gateway.db.migrations.versions.0025_audit_merkle_log")


def _log(runtime: Runtime, n: int) -> None:
    for i in range(n):
        with transaction(runtime.sessions) as s:
            audit.append(s, "test", f"thing:{i}", "tester", {"i": i, "é": [0.5, None]}, NOW)


def test_down_and_up_keeps_the_entries_and_their_order(runtime: Runtime) -> None:
    _log(runtime, 5)
    take_in(runtime, every=0)
    _down_to(runtime, BELOW.down_revision)
    assert "audit_tree_heads" not in inspect(runtime.engine).get_table_names()
    with runtime.engine.connect() as conn:
        chain = conn.execute(text("SELECT id, prev_hash, hash FROM audit_events ORDER BY id")
                             ).all()
        head = conn.execute(text("SELECT last_id, last_hash FROM audit_head")).one()
    assert chain[0].prev_hash == BELOW.GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(chain))
    assert tuple(head) == (chain[-1].id, chain[-1].hash)
    old_order = [r.id for r in chain]

    upgrade_database(runtime.engine)
    with runtime.sessions() as s:
        assert s.scalars(select(AuditEvent.seq)).all() == [None] * 5
    take_in(runtime, every=0)
    with runtime.sessions() as s:
        assert list(s.scalars(select(AuditEvent.id).order_by(AuditEvent.seq))) == old_order
    with runtime.sessions() as s:
        report = audit_service.verify(s, runtime.keys, NOW)
    assert (report["ok"], report["events"]) == (True, 5)


@pytest.mark.parametrize("tamper, named", [
    ("UPDATE audit_events SET actor = 'mallory' WHERE id = 3", "broken at event 3"),
    ("DELETE FROM audit_events WHERE id = 5", "head does not name its last event (4)"),
])
def test_a_tampered_chain_is_not_converted(runtime: Runtime, tamper: str, named: str) -> None:
    _log(runtime, 5)
    _down_to(runtime, BELOW.down_revision)
    with transaction(runtime.sessions) as s:
        s.execute(text(tamper))
    with pytest.raises(RuntimeError, match=re.escape(named)):
        upgrade_database(runtime.engine)
    assert "audit_tree_heads" not in inspect(runtime.engine).get_table_names()
