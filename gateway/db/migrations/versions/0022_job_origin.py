"""job origin: the door a job came in by (NULL: the gateway's own API; 'tes': GA4GH
TES), with an index of the others for TES listings (issue 30)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04 06:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0022'
down_revision: str | None = '0021'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases (as in 0011 and 0013): a batch "move and copy" on
# SQLite would drop the jobs table, which every job's events, attempts and labels
# reference.
def upgrade() -> None:
    # Every job so far came in by the gateway's own API (NULL).
    op.add_column('jobs', sa.Column('origin', sa.String(length=16), nullable=True))
    op.create_index('ix_jobs_owner_origin_created', 'jobs',
                    ['owner_id', 'origin', 'created_at', 'id'], unique=False,
                    postgresql_where=sa.text('origin IS NOT NULL'),
                    sqlite_where=sa.text('origin IS NOT NULL'))


def downgrade() -> None:
    op.drop_index('ix_jobs_owner_origin_created', table_name='jobs')
    op.drop_column('jobs', 'origin')
