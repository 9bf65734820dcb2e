"""job relations (issue 16): job_arrays and job_dependencies; jobs.gate (what keeps an
ACCEPTED job waiting: its dependencies or its array's throttle), jobs.array_job_id and
jobs.array_index (a task of a job array)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 00:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base

revision: str = '0013'
down_revision: str | None = '0012'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

GATED = sa.text('gate IS NOT NULL')


def upgrade() -> None:
    op.create_table('job_arrays',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('spec', sa.Text(), nullable=False),
    sa.Column('task_count', sa.Integer(), nullable=False),
    sa.Column('throttle', sa.Integer(), nullable=True),
    sa.Column('created_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_job_arrays_owner_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_arrays'))
    )
    op.create_index(op.f('ix_job_arrays_owner_id'), 'job_arrays', ['owner_id'], unique=False)
    op.create_table('job_dependencies',
    sa.Column('job_id', sa.String(length=36), nullable=False),
    sa.Column('depends_on_id', sa.String(length=36), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_dependencies_job_id_jobs')),
    sa.PrimaryKeyConstraint('job_id', 'depends_on_id', 'kind', name=op.f('pk_job_dependencies'))
    )
    # Plain ALTER TABLE on both databases: a batch "move and copy" on SQLite would drop the
    # jobs table, which every job's events, attempts and labels reference. SQLite adds a
    # column's foreign key only inline (ADD CONSTRAINT is not SQLite).
    op.add_column('jobs', sa.Column('gate', sa.String(length=16), nullable=True))
    if op.get_bind().dialect.name == 'sqlite':
        op.execute('ALTER TABLE jobs ADD COLUMN array_job_id VARCHAR(36) '
                   'REFERENCES job_arrays (id)')
    else:
        op.add_column('jobs', sa.Column('array_job_id', sa.String(length=36), nullable=True))
        op.create_foreign_key(op.f('fk_jobs_array_job_id_job_arrays'), 'jobs', 'job_arrays',
                              ['array_job_id'], ['id'])
    op.add_column('jobs', sa.Column('array_index', sa.Integer(), nullable=True))
    op.create_index('ix_jobs_array', 'jobs', ['array_job_id', 'array_index'], unique=False)
    op.create_index('ix_jobs_gate', 'jobs', ['gate'], unique=False,
                    postgresql_where=GATED, sqlite_where=GATED)


def downgrade() -> None:
    op.drop_index('ix_jobs_gate', table_name='jobs')
    op.drop_index('ix_jobs_array', table_name='jobs')
    op.drop_column('jobs', 'array_index')
    if op.get_bind().dialect.name != 'sqlite':
        op.drop_constraint(op.f('fk_jobs_array_job_id_job_arrays'), 'jobs', type_='foreignkey')
    op.drop_column('jobs', 'array_job_id')
    op.drop_column('jobs', 'gate')
    op.drop_table('job_dependencies')
    op.drop_index(op.f('ix_job_arrays_owner_id'), table_name='job_arrays')
    op.drop_table('job_arrays')
