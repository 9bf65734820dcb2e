"""Job inputs at submission: refuse what cannot be staged before the job is accepted.

Checked here (422 naming the field, or 413 naming the limit): duplicate or nested
`dest`s, unknown sites, uploads that are not complete uploads of the caller's (someone
else's upload reads exactly like one that does not exist), and the per-job file count
and byte limits as far as sizes are known now (uploads). Sizes of site:// and https://
inputs are only known while staging; the worker applies the same limits then. And a
`deliver` entry must send where the owner may write: a file:// directory they may use,
a site:// path at a site where they have their own account. A container may bind a
directory among the users' and projects' file:// directories only when it is one of the
owner's own, whole (a path below it could be a link the owner planted, which the site's
runtime would follow).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sqlalchemy.orm import Session

from containers.binds import under
from gateway.domain.deliveries import DestinationKind, parse_destination
from gateway.domain.errors import Invalid, TooLarge
from gateway.domain.jobspec import JobSpec
from gateway.domain.principal import Principal
from gateway.domain.sizes import human_bytes
from gateway.domain.staging import SourceKind, duplicate_dest, parse_source
from gateway.repositories import uploads
from gateway.services.data.file_urls import FileRoots
from gateway.services.data.site_writes import writable_at
from gateway.services.data.uploads import COMPLETE
from gateway.services.sites.registry import SiteRegistry
from gateway.settings import Settings


@dataclass(frozen=True)
class StagingLimits:
    input_max_bytes: int
    input_max_files: int
    output_max_bytes: int
    output_max_files: int
    # The directory templates file:// URLs may use (None: not checked, as for a spec
    # accepted before).
    file_url_dirs: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> StagingLimits:
        return cls(settings.job_input_max_bytes, settings.job_input_max_files,
                   settings.job_output_max_bytes, settings.job_output_max_files,
                   settings.file_url_dirs)

    @classmethod
    def unlimited(cls) -> StagingLimits:
        return cls(2**63 - 1, 2**31 - 1, 2**63 - 1, 2**31 - 1)


def over_limit(what: str, setting: str, value: int, limit: int, *, count: bool) -> TooLarge:
    """The 413 for `value` over `limit`: which limit, and by how much."""
    if count:
        shown, cap, excess = f"{value}", f"{limit}", f"{value - limit}"
    else:
        shown, cap, excess = human_bytes(value), human_bytes(limit), human_bytes(value - limit)
    return TooLarge(f"{what} is {shown}, over the per-job limit of {cap} ({setting}) by "
                    f"{excess}.", limit=setting, limit_value=limit, excess=value - limit)


def check_deliveries(session: Session, registry: SiteRegistry, limits: StagingLimits,
                     principal: Principal, spec: JobSpec) -> None:
    """Invalid (naming the entry) when a `deliver` entry sends files where the owner may
    not write: outside the directories they may use through file:// URLs, or at a site
    where they have no account of their own (gateway.services.data.site_writes)."""
    if limits.file_url_dirs is None:
        return
    roots = FileRoots.of_user(session, limits.file_url_dirs, principal.user_id,
                              principal.account_name)
    for index, delivery in enumerate(spec.deliver):
        # A directory's files go below it: check where one of them would.
        url = delivery.url_of(f"{delivery.strip}/x") if delivery.strip else delivery.url
        destination = parse_destination(url)
        try:
            if destination.kind is DestinationKind.FILE:
                roots.locate(url)
            elif destination.kind is DestinationKind.SITE:
                assert destination.site is not None
                writable_at(registry, destination.site, destination.target,
                            principal.account_name)
        except Invalid as exc:
            raise Invalid(exc.detail, field=f"deliver[{index}].url") from None


def check_shared_binds(session: Session, limits: StagingLimits, principal: Principal,
                       spec: JobSpec) -> None:
    """Invalid (naming the bind) when a container bind's source lies among the file://
    directories of users or projects (FileRoots.areas) and is not one of the owner's
    (both compared as written and resolved on the gateway's host, where they are)."""
    if limits.file_url_dirs is None or spec.container is None:
        return
    areas = FileRoots.areas(limits.file_url_dirs)
    among = [(i, bind.src, os.path.realpath(bind.src))
             for i, bind in enumerate(spec.container.binds)
             if any(under(bind.src, a) or under(os.path.realpath(bind.src), a) for a in areas)]
    if not among:
        return
    own = [str(d) for d in FileRoots.of_user(session, limits.file_url_dirs, principal.user_id,
                                             principal.account_name).dirs]
    for index, src, resolved in among:
        if resolved not in own:
            yours = ", ".join(own) if own else "none"
            raise Invalid(f"bind source {src!r} lies among the users' and projects' file:// "
                          f"directories: a job binds only one of its owner's own, whole "
                          f"(yours: {yours})", field=f"container.binds[{index}].src")


def check_inputs(session: Session, registry: SiteRegistry, limits: StagingLimits,
                 owner_id: str, spec: JobSpec) -> None:
    """Invalid or TooLarge when the job's inputs cannot be staged as given."""
    clash = duplicate_dest([i.dest for i in spec.inputs])
    if clash is not None:
        first, second = clash
        raise Invalid(f"inputs[{second}].dest '{spec.inputs[second].dest}' collides with "
                      f"inputs[{first}].dest '{spec.inputs[first].dest}': each input needs "
                      "its own path, and a file cannot also be a directory.",
                      field=f"inputs[{second}].dest")
    if len(spec.inputs) > limits.input_max_files:
        raise over_limit("The number of input files", "job_input_max_files",
                         len(spec.inputs), limits.input_max_files, count=True)
    total = 0
    for i, item in enumerate(spec.inputs):
        source = parse_source(item.source)
        if source.kind is SourceKind.SITE:
            assert source.site is not None
            try:
                registry.get(source.site)
            except Invalid as exc:
                raise Invalid(exc.detail, field=f"inputs[{i}].source") from None
        elif source.kind is SourceKind.UPLOAD:
            total += _upload_size(session, owner_id, source.upload_id or "", i)
    if total > limits.input_max_bytes:
        raise over_limit("The total size of the job's inputs", "job_input_max_bytes",
                         total, limits.input_max_bytes, count=False)


def _upload_size(session: Session, owner_id: str, upload_id: str, i: int) -> int:
    row = uploads.facts(session, owner_id, upload_id)
    if row is None:
        raise Invalid(f"inputs[{i}].source: you have no upload {upload_id}.",
                      field=f"inputs[{i}].source")
    if row.state != COMPLETE:
        raise Invalid(f"inputs[{i}].source: upload {upload_id} is {row.state}, not "
                      "complete; finish it ('gridgate upload FILE') first.",
                      field=f"inputs[{i}].source")
    return row.size
