"""What a routing pass is given (pure): each pending job's need, each site's state.

`forecaster.SiteForecaster` forecasts a `JobNeed` at each `SiteState`; production
(gateway/services/routing/forecasting.py), the federation simulator and the offline
evaluation build them from their own records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gateway.scheduling.queues.queue_profile import QueueProfile
from gateway.scheduling.queues.queue_state import QueueState


@dataclass(frozen=True, slots=True)
class JobNeed:
    """What routing knows of a pending job. Times in seconds, sizes in bytes.

    `fingerprint` names the application (executable, argument shape, image); `inputs`
    holds (source, bytes) pairs as the spec names them (`upload:<id>`, `site://...`);
    `key` is the caller's identifier (a job id), carried but never read; `home` is the
    site the job would go to without routing (None: it has none), where it is no guest;
    `accounts` holds (site, account) where the job would run under an account other
    than `user` (the site's community account, a mapped Unix account).
    """

    user: str
    fingerprint: str
    procs: int
    time_limit: float
    queue: str = ""
    inputs: tuple[tuple[str, int], ...] = ()
    output_bytes: int = 0
    key: str = ""
    home: str | None = None
    accounts: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.procs < 1:
            raise ValueError(f"a job needs at least one processor, not {self.procs}")
        if not self.time_limit > 0:  # also refuses NaN
            raise ValueError(f"a job's time limit must be positive, not {self.time_limit}")

    def account_at(self, site: str) -> str:
        """The account the job would run under at `site`."""
        if not self.accounts:  # most jobs: asked per site and job in a routing pass
            return self.user
        return next((account for name, account in self.accounts if name == site), self.user)


@dataclass(frozen=True, slots=True)
class SiteState:
    """One site at the start of a pass: its queue, the input sources it has cached and
    the time there (None: not known; the late-wait model reads its hour and weekday)."""

    name: str
    queue: QueueState
    cached: frozenset[str] = frozenset()
    local_time: datetime | None = None


# A site's (likely, walltime) profiles, built by a forecaster or kept from an earlier
# pass and advanced to now (`QueueProfile.advance`) when its queue has not changed since.
Profiles = tuple[QueueProfile, QueueProfile]
