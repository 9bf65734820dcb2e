"""job hold: jobs.held, set by `gridgate hold` while a job is ACCEPTED (issue 14)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 05:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases: a batch "move and copy" on SQLite would drop the
# jobs table, which every job's events, attempts and labels reference.
def upgrade() -> None:
    op.add_column('jobs', sa.Column('held', sa.Boolean(), server_default=sa.false(),
                                    nullable=False))


def downgrade() -> None:
    op.drop_column('jobs', 'held')
