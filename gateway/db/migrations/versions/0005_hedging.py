"""hedging and failover: job targets, the winning attempt, site status since

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('job_targets',
    sa.Column('job_id', sa.String(length=36), nullable=False),
    sa.Column('site_name', sa.String(length=64), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('created_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('claimed_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_targets_job_id_jobs')),
    sa.ForeignKeyConstraint(['site_name'], ['sites.name'],
                            name=op.f('fk_job_targets_site_name_sites')),
    sa.PrimaryKeyConstraint('job_id', 'site_name', name=op.f('pk_job_targets'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('winner_attempt_id', sa.Integer(), nullable=True))
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status_since', gateway.db.base.UTCDateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('sites', schema=None) as batch_op:
        batch_op.drop_column('status_since')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('winner_attempt_id')
    op.drop_table('job_targets')
