"""step exit codes: each step's exit code of a job of several steps (a container's
`then`: a GA4GH TES task's executors), as stage-out read them (issue 30)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023'
down_revision: str | None = '0022'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both databases, as in 0022.
def upgrade() -> None:
    op.add_column('attempts', sa.Column('step_exit_codes', sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column('attempts', 'step_exit_codes')
