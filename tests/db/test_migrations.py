from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from gateway.db.base import Base
from gateway.db.engine import make_engine
from gateway.db.migrate import upgrade_database


def test_upgrade_head_matches_models(empty_database_url: str) -> None:
    engine = make_engine(empty_database_url)
    try:
        upgrade_database(engine)
        upgrade_database(engine)  # idempotent: a second start changes nothing
        assert {"jobs", "attempts", "events", "users", "oauth_clients", "device_codes",
                "idempotency_keys", "projects", "memberships", "sites"} <= set(
                    inspect(engine).get_table_names())
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(context, Base.metadata)
        assert diff == [], f"models and migrations differ; add a revision: {diff}"
    finally:
        engine.dispose()
