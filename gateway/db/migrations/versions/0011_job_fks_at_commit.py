"""job foreign keys of quotes, liens and ledger legs checked at commit (issue 13)

A submission's quote, lien and lien legs are written in the statement that finds its
project, before the job row (one round trip on PostgreSQL); so these three foreign keys
to jobs are DEFERRABLE INITIALLY DEFERRED.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 05:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ('quotes', 'liens', 'ledger_entries')


def _job_fks(**when: str | bool) -> None:
    if op.get_bind().dialect.name == 'postgresql':
        clause = 'DEFERRABLE INITIALLY DEFERRED' if when else 'NOT DEFERRABLE'
        for table in TABLES:
            op.execute(f'ALTER TABLE {table} ALTER CONSTRAINT fk_{table}_job_id_jobs {clause}')
        return
    # SQLite alters a constraint by copying the table (env.py switches foreign keys off
    # meanwhile: the ledger references liens).
    for table in TABLES:
        name = f'fk_{table}_job_id_jobs'
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(name, type_='foreignkey')
            batch_op.create_foreign_key(name, 'jobs', ['job_id'], ['id'], **when)  # type: ignore[arg-type]


def upgrade() -> None:
    _job_fks(deferrable=True, initially='DEFERRED')


def downgrade() -> None:
    _job_fks()
