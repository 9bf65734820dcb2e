"""The database: ORM models (jobs, bank, relations, workflows), the engine and unit of
work, and the Alembic migrations (`migrations/`, applied by `migrate`)."""
