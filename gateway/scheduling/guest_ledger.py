"""The guest ledger: what each site's users were given at other sites, against what the
site gave guests (pure).

A job routed away from its home is a guest at its destination: it takes processors and
queue places the destination's own users need next, however right its forecast. On
KTH+CTC (days 180-360) the router filled KTH with CTC's jobs, forecast right on average,
and KTH's own jobs waited 45% longer than with no routing at all. A site's users should
not pay for the federation: so each site's credit is the processor-seconds its users'
jobs were given elsewhere minus those it gave guests, and a guest that would queue at a
site goes there only while the site's credit covers it (`SiteForecaster.forecast` marks
the others `welcome=False`; policies/home_guard.py ranks them behind home). A guest that
starts at once even if every job there runs to its limit delays no one and is always
welcome; it is counted all the same, since its processors are not free for the site's
next jobs while it runs.

Work is the job's processors times its predicted run time at the destination, in whole
processor-seconds (sums of integers are exact in any order: the ledger production
rebuilds equals the one the simulator keeps, to the last unit). The ledger covers the
last `window` routing decisions (every decision, home or away, takes a place), so an
imbalance is forgotten as the federation moves on. Production rebuilds it
from the recorded placements at each pass and the simulator keeps it across its passes;
both add each committed decision as it is made (`SiteForecaster.commit`).
"""

from __future__ import annotations

from collections import deque

# Decisions remembered: as many as the starts the wait histories are rebuilt from
# (gateway/services/routing/forecasting.py), so the ledger spans the same recent past.
WINDOW = 5000


def guest_work(procs: int, runtime: float) -> int:
    """A job's work at a site: its processors times its predicted run time there, in whole
    processor-seconds."""
    return round(procs * runtime)


class GuestLedger:
    """Per site, over the last `window` decisions: processor-seconds its users' jobs
    were given at other sites minus those its guests were given there."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError("the ledger's window holds at least one decision")
        self.window = window
        self._credit: dict[str, int] = {}
        self._decisions: deque[tuple[str, str, int]] = deque()

    def placed(self, home: str | None, site: str, work: int) -> None:
        """A decision placed a job whose home is `home` (None: it has none) at `site`,
        where it is predicted to hold `work` processor-seconds (`guest_work`)."""
        moved = (home, site, work) if home is not None and home != site else ("", "", 0)
        self._add(*moved)
        self._decisions.append(moved)
        if len(self._decisions) > self.window:
            old_home, old_site, old_work = self._decisions.popleft()
            self._add(old_home, old_site, -old_work)

    def credit(self, site: str) -> int:
        """Processor-seconds `site` may still give guests that would queue there."""
        return self._credit.get(site, 0)

    def _add(self, home: str, site: str, work: int) -> None:
        if work:
            self._credit[home] = self._credit.get(home, 0) + work
            self._credit[site] = self._credit.get(site, 0) - work
