"""Delivery: after a completed run's outputs are in the gateway store, send each that a
`deliver` entry of its spec names on to its URL (gateway.domain.deliveries), before the
job completes.

It runs inside stage-out, under the same lease: a worker that dies mid-way is replaced
and the whole delivery is done again, which writes the same bytes to the same places (a
file:// or site:// destination is replaced whole by a rename, a PUT replaces what it
names), so a crash never leaves a destination half written nor a job completed without
its files. A site that cannot be reached now (a transient AdapterError) leaves the
delivery to a later cycle, as for the collection itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from adapters.transfer import LocalFile, StagedFile, stage
from adapters.transport import FileTransport
from gateway.domain.deliveries import Delivery, DestinationKind, parse_destination
from gateway.domain.errors import GatewayError
from gateway.domain.sizes import human_bytes
from gateway.services.data import file_urls, https_put
from gateway.services.data.file_urls import FileRoots
from gateway.store import BlobStore
from rules import output_globs


class DeliveryFailed(GatewayError):
    """An output could not be sent where the spec asked."""

    title = "Delivery failed"


@dataclass(frozen=True)
class Stored:
    """An output in the gateway store: its path in the job directory, size and sha256."""

    path: str
    size: int
    sha256: str


# The owner's file transport at a site, to write a path there (site_writes.writable_at).
SiteFiles = Callable[[str, str], FileTransport]


def _no_sites(site: str, path: str) -> FileTransport:
    raise DeliveryFailed(f"site://{site}{path}: no site is reachable from here")


@dataclass(frozen=True)
class Sender:
    """How files leave: the owner's file:// directories, their accounts at sites, and
    the PUT's settings."""

    roots: FileRoots
    timeout: float
    put: Callable[..., None] = https_put.put
    site_files: SiteFiles = _no_sites


def deliver(deliveries: Sequence[Delivery], outputs: Sequence[Stored], store: BlobStore,
            sender: Sender, keep_lease: Callable[[], bool]) -> str | None:
    """Send every output `deliveries` name (DeliveryFailed naming the first that could
    not be); a note saying what was sent, or None when the lease was lost meanwhile."""
    sent, total = 0, 0
    for delivery in deliveries:
        matched = [o for o in outputs if output_globs.matches(delivery.glob, o.path)]
        if delivery.strip is None and len(matched) != 1:
            raise DeliveryFailed(f"the run left no file {delivery.glob} to send to "
                                 f"{delivery.url}" if not matched else
                                 f"{delivery.glob} matched {len(matched)} files; a "
                                 "destination without `strip` takes one")
        for output in matched:
            if not keep_lease():
                return None
            _send(output, delivery.url_of(output.path), store, sender)
            sent, total = sent + 1, total + output.size
    return f"delivered {sent} output(s), {human_bytes(total)}"


def _send(output: Stored, url: str, store: BlobStore, sender: Sender) -> None:
    destination = parse_destination(url)
    try:
        if destination.kind is DestinationKind.SITE:
            assert destination.site is not None
            files = sender.site_files(destination.site, destination.target)
            # Verified on the site and renamed into place (adapters.transfer.staging).
            stage(files, LocalFile(store.blob_path(output.sha256)),
                  StagedFile(output.sha256, output.size), destination.target)
            return
        with store.open_blob(output.sha256) as blob:
            if destination.kind is DestinationKind.FILE:
                file_urls.write_file(sender.roots, url, blob)
            else:
                sender.put(url, blob, output.size, timeout=sender.timeout)
    except GatewayError as exc:
        raise DeliveryFailed(f"{output.path} was not delivered: {exc.detail}") from None
    except OSError as exc:
        raise DeliveryFailed(f"{output.path} was not delivered to {url}: "
                             f"{exc.strerror or exc}") from None
