"""sites.load, sites.load_at (live load from queue snapshots, issue 12)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('load', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('load_at', gateway.db.base.UTCDateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('load_at')
        batch_op.drop_column('load')
