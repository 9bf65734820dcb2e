"""origin documents: a GA4GH TES task as its client sent it, beside the job made from it
(issue 30)

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04 10:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0024'
down_revision: str | None = '0023'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Tasks created before have none: they read back as their job spec says.
    op.create_table(
        'origin_documents',
        sa.Column('job_id', sa.String(length=36), nullable=False),
        sa.Column('document', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['job_id'], ['jobs.id']),
        sa.PrimaryKeyConstraint('job_id'))


def downgrade() -> None:
    op.drop_table('origin_documents')
