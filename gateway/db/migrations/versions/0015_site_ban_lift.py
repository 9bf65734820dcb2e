"""site ban lift: sites.ban_lifted_at, set by `gridgate admin site unban` (issue 25)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 23:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base

revision: str = '0015'
down_revision: str | None = '0014'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases: a batch "move and copy" on SQLite would drop the
# sites table, which attempts and jobs reference.
def upgrade() -> None:
    op.add_column('sites', sa.Column('ban_lifted_at',
                                     gateway.db.base.UTCDateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('sites', 'ban_lifted_at')
