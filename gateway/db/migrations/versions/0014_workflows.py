"""workflows (issue 16): workflows, workflow_steps (one row per step instance and the job
that runs it) and workflow_events

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base

revision: str = '0014'
down_revision: str | None = '0013'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('workflows',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('spec', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('fail_fast', sa.Boolean(), nullable=False),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('idempotency_key', sa.String(length=255), nullable=True),
    sa.Column('request_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ended_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_workflows_owner_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workflows')),
    sa.UniqueConstraint('owner_id', 'idempotency_key',
                        name=op.f('uq_workflows_owner_id'))
    )
    op.create_index('ix_workflows_owner_created', 'workflows', ['owner_id', 'created_at', 'id'],
                    unique=False)
    op.create_index('ix_workflows_state', 'workflows', ['state'], unique=False)
    op.create_table('workflow_steps',
    sa.Column('workflow_id', sa.String(length=36), nullable=False),
    sa.Column('instance', sa.String(length=80), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('step', sa.String(length=64), nullable=False),
    sa.Column('matrix_key', sa.Text(), nullable=False),
    sa.Column('job_id', sa.String(length=36), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('retry_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_workflow_steps_job_id_jobs')),
    sa.ForeignKeyConstraint(['workflow_id'], ['workflows.id'],
                            name=op.f('fk_workflow_steps_workflow_id_workflows')),
    sa.PrimaryKeyConstraint('workflow_id', 'instance', name=op.f('pk_workflow_steps'))
    )
    op.create_index(op.f('ix_workflow_steps_job_id'), 'workflow_steps', ['job_id'],
                    unique=False)
    op.create_table('workflow_events',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('workflow_id', sa.String(length=36), nullable=False),
    sa.Column('at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('instance', sa.String(length=80), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.ForeignKeyConstraint(['workflow_id'], ['workflows.id'],
                            name=op.f('fk_workflow_events_workflow_id_workflows')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_workflow_events'))
    )
    op.create_index('ix_workflow_events_workflow', 'workflow_events', ['workflow_id', 'id'],
                    unique=False)


def downgrade() -> None:
    op.drop_index('ix_workflow_events_workflow', table_name='workflow_events')
    op.drop_table('workflow_events')
    op.drop_index(op.f('ix_workflow_steps_job_id'), table_name='workflow_steps')
    op.drop_table('workflow_steps')
    op.drop_index('ix_workflows_state', table_name='workflows')
    op.drop_index('ix_workflows_owner_created', table_name='workflows')
    op.drop_table('workflows')
