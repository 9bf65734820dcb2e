"""one name per idea (issue 14): jobs.finished_at -> ended_at and jobs.state_reason ->
reason (as attempts have them); sites.status/status_reason/status_since -> state/reason/
state_since (as jobs have them); usage_records.elapsed_seconds -> elapsed (durations are
seconds, named without a unit)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28 00:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0012'
down_revision: str | None = '0011'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMES = [
    ('jobs', 'finished_at', 'ended_at'),
    ('jobs', 'state_reason', 'reason'),
    ('sites', 'status', 'state'),
    ('sites', 'status_reason', 'reason'),
    ('sites', 'status_since', 'state_since'),
    ('usage_records', 'elapsed_seconds', 'elapsed'),
]


# ALTER TABLE ... RENAME COLUMN on both databases (SQLite >= 3.25 rewrites the references
# to the column): a batch "move and copy" on SQLite would drop tables others reference.
def upgrade() -> None:
    for table, old, new in RENAMES:
        op.execute(f'ALTER TABLE {table} RENAME COLUMN {old} TO {new}')


def downgrade() -> None:
    for table, old, new in reversed(RENAMES):
        op.execute(f'ALTER TABLE {table} RENAME COLUMN {new} TO {old}')
