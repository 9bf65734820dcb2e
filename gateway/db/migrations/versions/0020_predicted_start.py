"""predicted starts: each attempt keeps the predicted start last announced while it waits
in its site's queue, so a routing pass announces only a change beyond the threshold
(`org.gridgate.job.prediction`, issue 29)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03 10:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import gateway.db.base

revision: str = '0020'
down_revision: str | None = '0019'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PREDICTION = 'org.gridgate.job.prediction'


def upgrade() -> None:
    # Adding a nullable column is a plain ALTER TABLE on SQLite too: no table rebuild.
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('predicted_start',
                                      gateway.db.base.UTCDateTime(timezone=True),
                                      nullable=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        # Dropping the column is a batch "move and copy" of `attempts`: foreign keys are
        # checked at commit, once the copy is back in place (as in 0019).
        op.execute('PRAGMA defer_foreign_keys = ON')
    # An older gateway knows no prediction events: they go with the column (and their
    # webhook deliveries, which refer to them).
    op.execute(sa.text("DELETE FROM webhook_deliveries WHERE event_id IN "
                       "(SELECT id FROM events WHERE type = :kind)").bindparams(kind=PREDICTION))
    op.execute(sa.text("DELETE FROM events WHERE type = :kind").bindparams(kind=PREDICTION))
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_column('predicted_start')
