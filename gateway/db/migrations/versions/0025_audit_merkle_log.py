"""audit merkle log: the hash chain (one head row every commit locked) becomes a Merkle
tree log with signed tree heads, which commits append to without a shared lock (issue 32)

The chain is checked link by link first, and a broken chain is not converted: the
conversion would give the tampered entries a tree of their own. Entries keep their ids and
content; the first sequencer step takes them into the tree in id order, which was the
chain's order, and signs the first head.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04 23:10:00
"""

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

import gateway.db.base
from gateway.accounting.audit_entry import canonical

revision: str = '0025'
down_revision: str | None = '0024'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GENESIS = "0" * 64
_events = sa.table(
    'audit_events', sa.column('id', sa.Integer()),
    sa.column('at', gateway.db.base.UTCDateTime(timezone=True)),
    sa.column('kind', sa.String()), sa.column('subject', sa.String()),
    sa.column('actor', sa.String()), sa.column('data', sa.JSON()),
    sa.column('prev_hash', sa.String()), sa.column('hash', sa.String()))
_head = sa.table('audit_head', sa.column('id', sa.Integer()), sa.column('last_id', sa.Integer()),
                 sa.column('last_hash', sa.String()))


def _link(prev: str, row: Any) -> str:
    return hashlib.sha256(prev.encode() + canonical(row.at, row.kind, row.subject, row.actor,
                                                    row.data)).hexdigest()


def _rows(conn: sa.Connection) -> Iterator[Any]:
    after = 0
    while True:
        rows = conn.execute(sa.select(_events).where(_events.c.id > after)
                            .order_by(_events.c.id).limit(1000)).all()
        yield from rows
        if len(rows) < 1000:
            return
        after = rows[-1].id


def _check_chain(conn: sa.Connection) -> None:
    prev, last = GENESIS, 0
    for row in _rows(conn):
        if row.prev_hash != prev or row.hash != _link(prev, row):
            raise RuntimeError(
                f"The audit chain is broken at event {row.id}: it was changed, or an event "
                "before it deleted or moved, and it is not converted to the Merkle log. "
                "Restore the database from a backup taken before the change, or check it "
                "with `gridgate audit verify` of the version before this one.")
        prev, last = row.hash, row.id
    head = conn.execute(sa.select(_head.c.last_id, _head.c.last_hash)).first()
    if (head is None and last) or (head is not None and tuple(head) != (last, prev)):
        raise RuntimeError(
            f"The audit chain's head does not name its last event ({last}): events after "
            "it were deleted. It is not converted to the Merkle log; restore the database "
            "from a backup.")


def upgrade() -> None:
    _check_chain(op.get_bind())
    op.drop_table('audit_head')
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.drop_constraint('uq_audit_events_hash', type_='unique')
        batch_op.drop_column('prev_hash')
        batch_op.drop_column('hash')
        batch_op.add_column(sa.Column('seq', sa.BigInteger(), nullable=True))
        batch_op.create_index('ix_audit_events_seq', ['seq'], unique=True)
        batch_op.create_index('ix_audit_events_unsequenced', ['id'], unique=False,
                              postgresql_where=sa.text('seq IS NULL'),
                              sqlite_where=sa.text('seq IS NULL'))
    op.create_table(
        'audit_tree_nodes',
        sa.Column('level', sa.SmallInteger(), nullable=False),
        sa.Column('index', sa.BigInteger(), nullable=False),
        sa.Column('hash', sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint('level', 'index', name=op.f('pk_audit_tree_nodes')))
    op.create_table(
        'audit_tree_heads',
        sa.Column('size', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column('root', sa.String(length=64), nullable=False),
        sa.Column('signature', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('size', name=op.f('pk_audit_tree_heads')))


def downgrade() -> None:
    # Back to a chain over the same entries, in id order (the tree's signatures go).
    op.drop_table('audit_tree_heads')
    op.drop_table('audit_tree_nodes')
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.drop_index('ix_audit_events_unsequenced')
        batch_op.drop_index('ix_audit_events_seq')
        batch_op.drop_column('seq')
        batch_op.add_column(sa.Column('prev_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('hash', sa.String(length=64), nullable=True))
    op.create_table(
        'audit_head',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('last_id', sa.Integer(), nullable=False),
        sa.Column('last_hash', sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_head')))
    conn = op.get_bind()
    prev, last = GENESIS, 0
    for row in _rows(conn):
        digest = _link(prev, row)
        conn.execute(sa.update(_events).where(_events.c.id == row.id)
                     .values(prev_hash=prev, hash=digest))
        prev, last = digest, row.id
    if last:
        conn.execute(sa.insert(_head).values(id=1, last_id=last, last_hash=prev))
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.alter_column('prev_hash', existing_type=sa.String(length=64), nullable=False)
        batch_op.alter_column('hash', existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint('uq_audit_events_hash', ['hash'])
