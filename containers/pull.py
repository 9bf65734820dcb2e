"""Registry pulls on the site: one `apptainer pull` per image into the site's cache, under a
lock, so that concurrent jobs wanting the same image pull it once.

    flock DEST.lock sh -c SCRIPT sh DEST REF RUNTIME...

SCRIPT is constant text; DEST, REF and the runtime's words arrive as its positional
parameters, so they are data. Under the lock: an existing DEST is used as it is; otherwise
the runtime pulls to DEST.partial (removed first: a pull killed half-way leaves one) and
renames it into place, so DEST never names a half-written image.
"""

from __future__ import annotations

import hashlib
import posixpath

from containers.errors import InvalidLaunch
from containers.refs import ImageRef, RefKind
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer

PULL_SCRIPT = ('dest=$1 ref=$2; shift 2; test -e "$dest" || { rm -f "$dest.partial" && '
               '"$@" pull "$dest.partial" "$ref" && mv -f "$dest.partial" "$dest"; }')
REGISTRY_KINDS = frozenset({RefKind.DOCKER, RefKind.ORAS, RefKind.LIBRARY})


def pulled_name(ref: ImageRef) -> str:
    """The cache file a registry image is pulled to: named by its reference (a tag may
    move; a digest reference never does)."""
    return f"pull-{hashlib.sha256(ref.uri.encode()).hexdigest()}.sif"


def pull_argv(runtime: RuntimeOffer, ref: ImageRef, cache_dir: str) -> tuple[list[str], str]:
    """The locked pull command and the image path it leaves in `cache_dir`."""
    if ref.kind not in REGISTRY_KINDS:
        raise InvalidLaunch(f"{ref.uri} is not a registry image: the gateway stages it")
    if runtime.kind is RuntimeKind.CHARLIECLOUD:
        raise InvalidLaunch("ch-run cannot pull: the gateway pulls registry images for "
                            "charliecloud and stages them (containers.compat: FetchAt.GATEWAY)")
    if not posixpath.isabs(cache_dir):
        raise InvalidLaunch(f"the site cache {cache_dir!r} is not an absolute path")
    dest = posixpath.join(cache_dir, pulled_name(ref))
    return ["flock", f"{dest}.lock", "sh", "-c", PULL_SCRIPT, "sh", dest, ref.uri,
            *runtime.argv], dest
