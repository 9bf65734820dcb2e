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


def _job_fks(when: str) -> None:
    # Only PostgreSQL takes the one-statement path. SQLite checks foreign keys per
    # statement either way, and altering a constraint there means copying the table
    # (liens is referenced by the ledger): left as it is.
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in TABLES:
        op.execute(f'ALTER TABLE {table} ALTER CONSTRAINT fk_{table}_job_id_jobs {when}')


def upgrade() -> None:
    _job_fks('DEFERRABLE INITIALLY DEFERRED')


def downgrade() -> None:
    _job_fks('NOT DEFERRABLE')
