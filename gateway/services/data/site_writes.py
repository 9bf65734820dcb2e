"""site:// destinations of a job's `deliver` entries: files written at a site as the
owner's own account there.

Only at a site that runs each user's jobs under their own account (a mapped site): there
the site's own permissions decide what the owner may write, as for a file they copied
themselves. A site whose jobs share one community account is refused, since through it one
user's job could overwrite another's files; so is the local site (the gateway's own host:
give a file:// URL) and the gateway's own area of any site (its job directories).
"""

from __future__ import annotations

from adapters.transport import FileTransport
from gateway.domain.errors import Invalid
from gateway.services.sites.entry import LOCAL_SITE
from gateway.services.sites.registry import SiteRegistry


def writable_at(registry: SiteRegistry, site: str, path: str, username: str | None
                ) -> FileTransport:
    """The owner's file transport at `site` to write `path` with; Invalid saying why not."""
    entry = registry.get(site)
    if entry.name == LOCAL_SITE:
        raise Invalid("site://local is the gateway's own host: send outputs there with a "
                      "file:// URL (in a directory the admin lets you use)")
    if entry.mapped is None:
        raise Invalid(f"site '{site}' runs every user's jobs under one shared account: "
                      "gridgate writes site:// outputs only at sites where you have an "
                      "account of your own")
    root = entry.workdir_root.rstrip("/")
    if path == root or path.startswith(root + "/"):
        raise Invalid(f"{path} lies in the gateway's own area of site '{site}' ({root}): "
                      "name a directory of your own there")
    return entry.adapter_for(username).files
