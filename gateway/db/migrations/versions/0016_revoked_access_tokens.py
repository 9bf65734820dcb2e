"""revoked access tokens: a signed-out dashboard session's token, by jti (issue 25)

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01 23:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base


revision: str = '0016'
down_revision: str | None = '0015'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('revoked_access_tokens',
    sa.Column('jti', sa.String(length=64), nullable=False),
    sa.Column('expires_at', gateway.db.base.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('jti', name=op.f('pk_revoked_access_tokens'))
    )
    with op.batch_alter_table('revoked_access_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_revoked_access_tokens_expires_at'),
                              ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('revoked_access_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_revoked_access_tokens_expires_at'))

    op.drop_table('revoked_access_tokens')
