"""reports: a covering index on the ledger by time, for reports as of T (issue 13)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 02:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.create_index('ix_ledger_entries_at_cover',
                              ['at', 'allocation_id', 'account', 'amount_milli'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('ledger_entries', schema=None) as batch_op:
        batch_op.drop_index('ix_ledger_entries_at_cover')
