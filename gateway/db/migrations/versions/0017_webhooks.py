"""webhooks: subscriptions and their deliveries from the event outbox (issue 29 item 4)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 17:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0017'
down_revision: str | None = '0016'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('webhooks',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('owner_id', sa.String(length=36), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('types', sa.JSON(), nullable=False),
    sa.Column('job_ids', sa.JSON(), nullable=False),
    sa.Column('secret', sa.String(length=128), nullable=False),
    sa.Column('floor', sa.Integer(), nullable=False),
    sa.Column('cursor', sa.Integer(), nullable=False),
    sa.Column('created_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('disabled_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('disabled_reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_webhooks_owner_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhooks'))
    )
    with op.batch_alter_table('webhooks', schema=None) as batch_op:
        batch_op.create_index('ix_webhooks_owner_created', ['owner_id', 'created_at'], unique=False)

    op.create_table('webhook_deliveries',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('webhook_id', sa.String(length=36), nullable=False),
    sa.Column('event_id', sa.Integer(), nullable=False),
    sa.Column('subject', sa.String(length=36), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('created_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('next_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('first_failed_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('delivered_at', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('lease_until', gateway.db.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('lease_owner', sa.String(length=128), nullable=True),
    sa.Column('last_status', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['event_id'], ['events.id'], name=op.f('fk_webhook_deliveries_event_id_events')),
    sa.ForeignKeyConstraint(['webhook_id'], ['webhooks.id'], name=op.f('fk_webhook_deliveries_webhook_id_webhooks'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries')),
    sa.UniqueConstraint('webhook_id', 'event_id', name=op.f('uq_webhook_deliveries_webhook_id'))
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_deliveries_due', ['state', 'next_at'], unique=False)
        batch_op.create_index('ix_webhook_deliveries_subject', ['webhook_id', 'subject', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_deliveries_subject')
        batch_op.drop_index('ix_webhook_deliveries_due')

    op.drop_table('webhook_deliveries')
    with op.batch_alter_table('webhooks', schema=None) as batch_op:
        batch_op.drop_index('ix_webhooks_owner_created')

    op.drop_table('webhooks')
