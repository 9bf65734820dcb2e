"""site:// outputs: written as the owner's own account at a mapped site, verified and
renamed into place; never through a community account, on the local site or into the
gateway's own area of a site. Here a "site" is a local directory reached through the
real file commands (LocalTransport)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from adapters.transport import LocalTransport
from gateway.domain.deliveries import Delivery, DestinationKind, parse_destination
from gateway.domain.errors import Invalid
from gateway.runtime import Runtime
from gateway.services.data.file_urls import FileRoots
from gateway.services.data.site_writes import writable_at
from gateway.services.sites.entry import NoAccount
from gateway.services.sites.registry import SiteRegistry
from gateway.store import BlobStore
from gateway.worker.staging.deliver import Sender, Stored, deliver


class _Account:
    """An account's adapter at a mapped site: only its files are used here."""

    files = LocalTransport()


@pytest.fixture
def registry(runtime: Runtime, tmp_path: Path) -> SiteRegistry:
    local = runtime.sites.get("local")
    mapped = dataclasses.replace(local, name="kth", owner_only=None,
                                 workdir_root=str(tmp_path / "kth-scratch"),
                                 mapped={"ada": _Account()})  # type: ignore[dict-item]
    shared = dataclasses.replace(local, name="ctc", owner_only=None, mapped=None)
    return SiteRegistry([local, mapped, shared])


def test_destinations_parse() -> None:
    found = parse_destination("site://kth/home/ada/run/out.txt")
    assert (found.kind, found.site, found.target) == (DestinationKind.SITE, "kth",
                                                     "/home/ada/run/out.txt")
    assert parse_destination("site://kth/home/ada/run/", directory=True).target == \
        "/home/ada/run"
    for bad in ("site://kth/home/../etc/x", "site://KTH/x", "site://kth/", "site://kth/a/"):
        with pytest.raises(ValueError):
            parse_destination(bad)


def test_only_the_owner_s_own_account_writes(registry: SiteRegistry, tmp_path: Path) -> None:
    assert writable_at(registry, "kth", str(tmp_path / "ada/x"), "ada") is not None
    for site, path, user, says in (
            ("local", "/tmp/x", "ada", "gateway's own host"),
            ("ctc", "/tmp/x", "ada", "one shared account"),
            ("kth", f"{tmp_path}/kth-scratch/gw-1/x", "ada", "gateway's own area"),
            ("nowhere", "/tmp/x", "ada", "Unknown site")):
        with pytest.raises(Invalid, match=says):
            writable_at(registry, site, path, user)
    with pytest.raises(NoAccount):
        writable_at(registry, "kth", str(tmp_path / "x"), "bob")


def test_a_site_output_is_written_verified(registry: SiteRegistry, tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    data = b"result\n" * 1000
    sha = hashlib.sha256(data).hexdigest()
    incoming = store.new_incoming()
    incoming.write_bytes(data)
    store.promote_file(incoming, sha)
    home = tmp_path / "ada"
    home.mkdir(mode=0o700)
    sender = Sender(FileRoots(()), 5,
                    site_files=lambda site, path: writable_at(registry, site, path, "ada"))
    note = deliver([Delivery(glob="o/**", strip="o", url=f"site://kth{home}/run/")],
                   [Stored("o/a/r.txt", len(data), sha)], store, sender, lambda: True)
    assert note is not None and note.startswith("delivered 1 output(s)")
    assert (home / "run/a/r.txt").read_bytes() == data
    assert sorted(p.name for p in (home / "run/a").iterdir()) == ["r.txt"]

