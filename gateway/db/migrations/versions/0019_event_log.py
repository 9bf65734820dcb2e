"""one event log: events gain a type, a subject, a project, an owner and data, so facts
other than job states (placements, workflows and their steps, site states, allocation
usage and status) share the job states' ids, outbox and stream; and when each row was
written (issue 29)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 22:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base

revision: str = '0019'
down_revision: str | None = '0018'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JOB_STATE = 'org.gridgate.job.state'


def upgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        # A batch "move and copy" drops `events`, which webhook deliveries refer to:
        # the foreign keys are checked at commit instead, when the copy is back in
        # place (foreign_keys=OFF cannot be set inside the migration's transaction).
        op.execute('PRAGMA defer_foreign_keys = ON')
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.add_column(sa.Column('type', sa.String(length=48), nullable=False,
                                      server_default=JOB_STATE))
        batch_op.add_column(sa.Column('subject', sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column('project_id', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('owner_id', sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column('data', sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column('recorded_at', gateway.db.base.UTCDateTime(timezone=True),
                                      server_default=sa.text('CURRENT_TIMESTAMP'),
                                      nullable=True))
        batch_op.alter_column('job_id', existing_type=sa.String(length=36), nullable=True)
        batch_op.alter_column('to_state', existing_type=sa.String(length=16), nullable=True)
        batch_op.create_foreign_key(batch_op.f('fk_events_project_id_projects'), 'projects',
                                    ['project_id'], ['id'])
        batch_op.create_foreign_key(batch_op.f('fk_events_owner_id_users'), 'users',
                                    ['owner_id'], ['id'])


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('PRAGMA defer_foreign_keys = ON')
    op.execute(sa.text("DELETE FROM events WHERE type != :state").bindparams(state=JOB_STATE))
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_events_owner_id_users'), type_='foreignkey')
        batch_op.drop_constraint(batch_op.f('fk_events_project_id_projects'),
                                 type_='foreignkey')
        batch_op.alter_column('to_state', existing_type=sa.String(length=16), nullable=False)
        batch_op.alter_column('job_id', existing_type=sa.String(length=36), nullable=False)
        batch_op.drop_column('recorded_at')
        batch_op.drop_column('data')
        batch_op.drop_column('owner_id')
        batch_op.drop_column('project_id')
        batch_op.drop_column('subject')
        batch_op.drop_column('type')
