"""The long-lived objects one gateway process shares: built once, passed explicitly."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from gateway.db.base import utcnow
from gateway.db.engine import make_engine, make_reader_engine, make_session_factory, transaction
from gateway.metrics import Metrics
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.auth.authenticator import Authenticator
    from gateway.auth.keys import SigningKeys
    from gateway.services.sites.registry import SiteRegistry


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    reader_engine: Engine
    sessions: sessionmaker[Session]
    # For requests that only read: autocommit on PostgreSQL (no BEGIN/ROLLBACK trips).
    readers: sessionmaker[Session]
    keys: SigningKeys
    authenticator: Authenticator
    sites: SiteRegistry
    metrics: Metrics
    # Now, aware UTC; tests replace it to step through time windows.
    clock: Callable[[], datetime] = utcnow

    def unit_of_work(self) -> AbstractContextManager[Session]:
        """One unit of work for a request that writes (use as a context manager): it
        commits when the block ends, before the route builds its answer, so a failed
        commit is an error response and never a 2xx for data that was not stored. (Not
        a FastAPI dependency with `yield`: their exit code runs after the response is
        sent.) Any exception in the block rolls everything back."""
        return transaction(self.sessions)

    def reading(self) -> Connection:
        """A connection for a request that only reads (use as a context manager)."""
        return self.reader_engine.connect()

    def close(self) -> None:
        self.authenticator.close()
        self.sites.close()
        self.engine.dispose()
        self.reader_engine.dispose()


def build_runtime(settings: Settings, *, migrate: bool = True) -> Runtime:
    """Open the database (migrating it to head), load keys and sites."""
    from gateway.auth.accounts import ensure_cli_client
    from gateway.auth.authenticator import Authenticator
    from gateway.auth.keys import SigningKeys
    from gateway.auth.ssh_ca import SshCa
    from gateway.db.migrate import upgrade_database
    from gateway.services.sites.certificates import CertificateSigner
    from gateway.services.sites.registry import SiteRegistry

    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = make_engine(settings.resolved_database_url)
    if migrate:
        upgrade_database(engine)
    sessions = make_session_factory(engine)
    reader_engine = make_reader_engine(engine)
    readers = make_session_factory(reader_engine)
    keys = SigningKeys.load_or_create(settings.resolved_signing_key_path)
    signer = CertificateSigner(SshCa(settings.ssh_ca_dir), sessions, utcnow)
    sites = SiteRegistry.from_settings(settings, signer=signer)
    for attempt in range(2):
        # Processes starting together may race to insert the same rows: the loser
        # finds them on its second pass.
        try:
            sites.sync(sessions)
            with transaction(sessions) as session:
                ensure_cli_client(session)
            break
        except IntegrityError:
            if attempt:
                raise
    authenticator = Authenticator(settings, sessions, keys)
    return Runtime(settings, engine, reader_engine, sessions, readers, keys, authenticator, sites,
                   Metrics(readers))
