"""placements (routing decisions, issue 12)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 22:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('placements',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=36), nullable=False),
    sa.Column('decided_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('policy', sa.String(length=16), nullable=False),
    sa.Column('hedge', sa.Integer(), nullable=False),
    sa.Column('deadline', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('chosen', sa.JSON(), nullable=False),
    sa.Column('why', sa.Text(), nullable=False),
    sa.Column('candidates', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_placements_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_placements'))
    )
    with op.batch_alter_table('placements', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_placements_job_id'), ['job_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('placements', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_placements_job_id'))

    op.drop_table('placements')
