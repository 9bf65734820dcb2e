"""imported_waits (wait history from SWF logs and sacct/qacct dumps, issue 12)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 23:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('imported_waits',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('site_name', sa.String(length=64), nullable=False),
    sa.Column('queue', sa.String(length=64), nullable=False),
    sa.Column('procs', sa.Integer(), nullable=False),
    sa.Column('time_limit_seconds', sa.Float(), nullable=True),
    sa.Column('user', sa.String(length=255), nullable=True),
    sa.Column('wait_seconds', sa.Float(), nullable=False),
    sa.Column('started_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('source', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['site_name'], ['sites.name'],
                            name=op.f('fk_imported_waits_site_name_sites')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_imported_waits'))
    )
    with op.batch_alter_table('imported_waits', schema=None) as batch_op:
        batch_op.create_index('ix_imported_waits_started_at', ['started_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('imported_waits', schema=None) as batch_op:
        batch_op.drop_index('ix_imported_waits_started_at')
    op.drop_table('imported_waits')
