"""One configured site as the gateway holds it: its shape, its adapter(s), who it serves."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo

from adapters.base import Adapter
from containers.site_caps import SiteContainerCaps
from gateway.accounting.rates import ONE_SU_PER_CORE_HOUR, Rate
from gateway.domain.errors import Invalid
from gateway.scheduling.constraints import LabelRules
from gateway.scheduling.feasibility import SiteShape
from gateway.siteconfig.routing import DEFAULT_TRANSFER_RATE_MB_S

LOCAL_SITE = "local"
CACHE_DIR = ".gridgate-cache"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class SiteEntry:
    """One configured site."""

    name: str
    kind: str
    description: str
    shape: SiteShape
    max_jobs: int
    # The community account's adapter (or the gateway's own, for the local site); on a
    # mapped site, the status account's or else the first mapped account's, used only for
    # site-wide questions.
    adapter: Adapter
    workdir_root: str
    # Mapped sites: gateway username -> the adapter that acts as that user's own account.
    mapped: Mapping[str, Adapter] | None = None
    # The local site: "sandbox" (each job confined) or "none"; None on other sites.
    isolation: str | None = None
    # Unconfined local site: the one gateway username (the OS account that runs the
    # gateway) it serves, since its jobs act as that account.
    owner_only: str | None = None
    # Routing (site config `routing`): labels required or refused, zones, relative speed, and
    # the transfer rate assumed until one is measured.
    labels: LabelRules = field(default_factory=LabelRules)
    zones: frozenset[str] = frozenset()
    speed: float = 1.0
    transfer_rate_mb_s: float = DEFAULT_TRANSFER_RATE_MB_S
    # What a job costs here (site config `charge_factor` and `charging`).
    rate: Rate = ONE_SU_PER_CORE_HOUR
    # What container jobs find here (site config `containers`); None: none run here.
    containers: SiteContainerCaps | None = None
    # The Unix account that runs a gateway user's jobs here, as the scheduler's queue
    # names it: by gateway username, or under "" for everyone (a community account).
    accounts: Mapping[str, str] = field(default_factory=dict)
    # The gateway projects whose jobs run here (site config `accounts.projects`); empty:
    # every project.
    projects: frozenset[str] = frozenset()
    # A certificate site's status account (`certificate.status_account`): asked about
    # every account's jobs at once; None: each account about its own.
    status: Adapter | None = None
    # The site's clock: its scheduler's time zone (`scheduler.timezone`), where the
    # late-wait model reads the hour and weekday a job is submitted at.
    timezone: tzinfo = UTC

    def takes(self, project: str | None) -> bool:
        """Whether jobs charged to `project` may run here (None: not yet known)."""
        return not self.projects or project is None or project in self.projects

    def workdir(self, tag: str) -> str:
        """The directory an attempt with this tag runs in."""
        return f"{self.workdir_root.rstrip('/')}/{tag}"

    def cache_dir(self, username: str | None) -> str:
        """The staging cache (content by sha256) beside the job directories, so cached
        files hard-link into them; one per account on a site that maps accounts."""
        root = self.workdir_root.rstrip("/")
        if self.mapped is None:
            return f"{root}/{CACHE_DIR}"
        return f"{root}/{CACHE_DIR}-{_SAFE_NAME.sub('_', username or '')}"

    def account_name(self, username: str | None) -> str | None:
        """The Unix account this user's jobs run under here (None: not known)."""
        everyone = self.accounts.get("")
        return everyone if everyone is not None else self.accounts.get(username or "")

    def serves(self, username: str | None) -> bool:
        """Whether this user's jobs can run here (always, unless the site maps accounts
        or is an unconfined local site)."""
        if self.owner_only is not None:
            return username == self.owner_only
        return self.mapped is None or (username is not None and username in self.mapped)

    def follower_for(self, username: str | None) -> Adapter:
        """The adapter that asks about this user's jobs' state and accounting: the status
        account's where the site has one, else the user's own (NoAccount as adapter_for)."""
        return self.status if self.status is not None else self.adapter_for(username)

    def adapter_for(self, username: str | None) -> Adapter:
        """The adapter that runs, follows and reads this user's jobs.

        Raises NoAccount on a mapped site where the user has no account, and on an
        unconfined local site for anyone but the gateway's own account."""
        if self.owner_only is not None and username != self.owner_only:
            raise NotIsolated(self.name, self.owner_only)
        if self.mapped is None:
            return self.adapter
        adapter = self.mapped.get(username or "")
        if adapter is None:
            raise NoAccount(self.name, username)
        return adapter


class NoAccount(Invalid):
    """A mapped site has no account for this gateway user."""

    def __init__(self, site: str, username: str | None) -> None:
        who = f"gateway user '{username}'" if username else "users without a gateway username"
        super().__init__(f"Site '{site}' runs jobs under each user's own account and has none "
                         f"for {who}; ask the site's administrators to map you, or choose "
                         "another site.", field="site")


class NotIsolated(NoAccount):
    """The local site cannot confine jobs, so it runs only the gateway account's own."""

    def __init__(self, site: str, owner: str) -> None:
        Invalid.__init__(self, f"Site '{site}' runs jobs unconfined, as the gateway's own "
                         f"account, so it only takes jobs of gateway user '{owner}'. Choose "
                         "another site, or ask the administrators to install bubblewrap "
                         "(bwrap) so local jobs are sandboxed.", field="site")


