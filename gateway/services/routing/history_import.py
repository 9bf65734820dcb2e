"""Import a site's past queue waits (an SWF log, a sacct or qacct dump) to start its wait
history: until the gateway has observed enough waits there itself, routing would
otherwise know the site only by its live queue (gateway.services.routing.forecasting reads the
imported waits before the observed ones)."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from pathlib import Path

from sqlalchemy.orm import Session

from gateway.domain.errors import Invalid
from gateway.repositories import imported_waits
from gateway.repositories.imported_waits import PastWaitRow
from gateway.scheduling.prediction import history_import
from gateway.scheduling.prediction.history_import import HistoryFormatError, Imported
from gateway.services.sites.registry import SiteRegistry


def import_history(session: Session, registry: SiteRegistry, site: str, path: Path,
                   kind: str, tz: tzinfo = UTC) -> Imported:
    """Read `path` as `kind` and store its waits for `site`; Invalid saying why not."""
    if site not in registry.names():
        known = ", ".join(registry.names()) or "none"
        raise Invalid(f"Unknown site '{site}'. Known sites: {known}.", field="site")
    try:
        found = history_import.read(path, kind, tz)
    except HistoryFormatError as exc:
        raise Invalid(f"{path.name}: {exc}", field="file") from exc
    except OSError as exc:
        raise Invalid(f"cannot read {path}: {exc.strerror or exc}", field="file") from exc
    rows = [PastWaitRow(site, w.queue, w.procs, w.time_limit, w.user, w.wait,
                        datetime.fromtimestamp(w.started, UTC))
            for w in history_import.in_order(found.waits)]
    imported_waits.add_many(session, site, f"{kind}:{path.name}", rows)
    return found
