"""guest ledger: each placement keeps the home a job left and the processor-seconds it
was predicted to hold where it went, so that a routing pass rebuilds the guest ledger
from narrow columns (`gateway.scheduling.guest_ledger`, issue 27)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0021'
down_revision: str | None = '0020'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns: a plain ALTER TABLE on SQLite too. Decisions recorded before
    # count as stays, so the ledger starts even.
    with op.batch_alter_table('placements', schema=None) as batch_op:
        batch_op.add_column(sa.Column('guest_of', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('guest_work', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        # Dropping columns is a batch "move and copy" of `placements` (as in 0019).
        op.execute('PRAGMA defer_foreign_keys = ON')
    with op.batch_alter_table('placements', schema=None) as batch_op:
        batch_op.drop_column('guest_work')
        batch_op.drop_column('guest_of')
