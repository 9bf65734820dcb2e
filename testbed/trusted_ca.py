"""Certificate logins at a running testbed site: the CA keys its sshd trusts (the file
its `TrustedUserCAKeys` names, in the site's own /etc). sshd reads the file at each
login, so a change takes effect at the next connection, with no restart."""

from __future__ import annotations

from collections.abc import Sequence

from testbed.holder import site_path
from testbed.render import TRUSTED_CA
from testbed.state import SiteInfo


def trust(site: SiteInfo, lines: Sequence[str]) -> None:
    """Trust exactly these CA public key lines at `site` (none: no certificate logs in)."""
    site_path(site.holder_pid, TRUSTED_CA).write_text("".join(f"{line}\n" for line in lines))
