"""The gateway store: partial uploads and content-addressed blobs on local disk.

    store = BlobStore(settings.store_dir)
    with store.open_blob(sha256) as f: ...      # what stage-in reads
"""

from gateway.store.blobs import BlobStore, is_sha256
from gateway.store.parts import PartWriter

__all__ = ["BlobStore", "PartWriter", "is_sha256"]
