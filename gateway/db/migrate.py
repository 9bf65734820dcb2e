"""Alembic, driven from code: `upgrade_database` is what serve, worker and tests call."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

from gateway.db.engine import is_postgres

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# Any constant works; it only has to be the same for every gateway process.
_PG_MIGRATION_LOCK = 0x6772_6964


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade_database(engine: Engine) -> None:
    """Bring the schema to head. Safe when several processes start at once."""
    if is_postgres(engine):
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            try:
                cfg = alembic_config(engine)
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
                conn.commit()
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_MIGRATION_LOCK})
                conn.commit()
    else:
        command.upgrade(alembic_config(engine), "head")
