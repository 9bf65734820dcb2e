"""Verified, atomic, resumable file placement on sites over a `FileTransport`.

`site_fs` runs the few site-side commands (mkdir, stat, sha256sum, mv, ln) as argv;
`claim` is a staging's one command before its upload, `follow` verifies a large file as
it arrives;
`sources` says where bytes come from (a local file, or a file at another site streamed
through the gateway); `staging` puts them in place. Never imports gateway or paramiko.
"""

from adapters.transfer.sources import LocalFile, SiteFile, Source
from adapters.transfer.staging import (
    StagedFile,
    StageResult,
    StagingFailed,
    copy_site_to_site,
    stage,
    stage_file,
)

__all__ = [
    "LocalFile", "SiteFile", "Source", "StageResult", "StagedFile", "StagingFailed",
    "copy_site_to_site", "stage", "stage_file",
]
