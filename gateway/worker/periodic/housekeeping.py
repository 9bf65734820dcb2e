"""Housekeeping step: expire unfinished uploads idle past their time, sweep the store's
incoming files left by a crash, the SquashFS partitions extracted from images no longer
in the store, and images fetched for sites (registry pulls, https downloads) but unused
for a week, at most once a minute. (The sites' staging caches are pruned on each site's
own lane: gateway.worker.staging.site_caches.)"""

from __future__ import annotations

import logging
import time

from gateway.db.base import utcnow
from gateway.services.data.uploads import expire_uploads
from gateway.services.images.cache import sweep_image_cache
from gateway.store import BlobStore
from gateway.worker.context import StepContext
from gateway.worker.staging.stage_image import sweep_derived

log = logging.getLogger(__name__)

UPLOAD_EXPIRY_SECONDS = 60.0
# Incoming files (https inputs, fetched outputs) older than this were left by a crash:
# a day is far longer than any one download takes.
INCOMING_MAX_AGE_SECONDS = 24 * 3600.0
# An extracted partition whose SIF left the store is kept this long after its last use: an
# https image the server gave no validators for is downloaded again for each job, and its
# partition need not be extracted again.
DERIVED_MAX_AGE_SECONDS = 24 * 3600.0
# An image the gateway fetched for sites is kept this long after its last use.
IMAGE_CACHE_MAX_AGE_SECONDS = 7 * 24 * 3600.0


class Housekeeping:
    """Runs on a worker's first cycle, then at most every UPLOAD_EXPIRY_SECONDS."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._next = 0.0

    def run(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + UPLOAD_EXPIRY_SECONDS
        store = BlobStore(self.ctx.rt.settings.store_dir)
        with self.ctx.unit() as session:
            expired = expire_uploads(session, store, utcnow())
        if expired:
            log.info("expired %d unfinished upload(s)", expired)
        if swept := store.sweep_incoming(INCOMING_MAX_AGE_SECONDS):
            log.info("removed %d incoming file(s) left by an interrupted fetch", swept)
        if swept := sweep_derived(store, DERIVED_MAX_AGE_SECONDS):
            log.info("removed %d extracted image partition(s) whose image left the store",
                     swept)
        if swept := sweep_image_cache(store, IMAGE_CACHE_MAX_AGE_SECONDS):
            log.info("removed %d fetched image(s) unused for a week", swept)
