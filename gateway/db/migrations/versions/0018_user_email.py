"""job mail: users' verified addresses, what each job asked, mails sent, the cursor (issue 29)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 18:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0018'
down_revision: str | None = '0017'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: a batch "move and copy" on SQLite would drop the
    # users table every other table refers to.
    op.add_column('users', sa.Column('email', sa.String(length=254), nullable=True))
    op.create_table('mail_requests',
    sa.Column('job_id', sa.String(length=36), nullable=False),
    sa.Column('address', sa.String(length=254), nullable=False),
    sa.Column('kinds', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_mail_requests_job_id_jobs')),
    sa.PrimaryKeyConstraint('job_id', name=op.f('pk_mail_requests'))
    )
    op.create_table('mail_sent',
    sa.Column('job_id', sa.String(length=36), nullable=False),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('event_id', sa.Integer(), nullable=False),
    sa.Column('lease_owner', sa.String(length=255), nullable=True),
    sa.Column('lease_until', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('sent_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('outcome', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_mail_sent_job_id_jobs')),
    sa.PrimaryKeyConstraint('job_id', 'kind', name=op.f('pk_mail_sent'))
    )
    with op.batch_alter_table('mail_sent', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mail_sent_lease_until'), ['lease_until'],
                              unique=False)
    op.create_table('mail_cursor',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('last_event_id', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_mail_cursor'))
    )


def downgrade() -> None:
    op.drop_table('mail_cursor')
    with op.batch_alter_table('mail_sent', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mail_sent_lease_until'))
    op.drop_table('mail_sent')
    op.drop_table('mail_requests')
    op.drop_column('users', 'email')
