"""An uploaded image (`container.image: upload:<id>`) read at submit and estimate.

The gateway holds the file, so it checks it before accepting the job: one of the caller's
complete uploads, a SIF whose primary partition is SquashFS (what every runtime here runs,
and what charliecloud gets extracted), and, in hybrid or bind mode, the MPI inside it:
`unsquashfs -l` lists the partition's files and `containers.image.mpi_abi` names the MPI their
library names show. `gateway.domain.image_mpi` settles that against what the spec states,
and the stored spec says what was found (mpi.flavor, container.mpi_version), so routing,
retries and failover read it without opening the image again.

Done at submit rather than at upload completion: only images used in MPI modes need the
listing, and an upload is not known to be an image until a job says so. Results are kept
by the file's sha256 (its content), so they never go stale, and a second job on the same
image costs nothing.
"""

from __future__ import annotations

import logging
import subprocess
from collections import OrderedDict
from pathlib import Path
from threading import Lock

from sqlalchemy.orm import Session

from containers.errors import SifFormatError
from containers.image import tools as image_tools
from containers.image.mpi_abi import MpiAbi, detect_mpi
from containers.image.sif import FsType, has_squashfs_magic, read_sif
from containers.refs import RefKind, parse_image_ref
from containers.runtimes import MpiMode
from gateway.domain.errors import Invalid, Unavailable
from gateway.domain.image_mpi import reconcile
from gateway.domain.jobspec import JobSpec
from gateway.repositories import uploads
from gateway.services.data.uploads import COMPLETE
from gateway.store.blobs import BlobStore

log = logging.getLogger(__name__)

IMAGE = "container.image"
LIST_TIMEOUT_SECONDS = 300
CACHE_SIZE = 256
_found: OrderedDict[str, MpiAbi] = OrderedDict()
_lock = Lock()


def _partition_offset(path: Path, upload_id: str, field: str = IMAGE) -> int:
    """The byte offset of the SIF's primary SquashFS partition; Invalid if there is none."""
    try:
        with path.open("rb") as stream:
            image = read_sif(stream)
            primary = image.primary_partition()
            squashfs = (primary.partition is not None
                        and primary.partition.fs_type == FsType.SQUASHFS
                        and has_squashfs_magic(stream, primary))
    except SifFormatError as exc:
        raise Invalid(f"Upload {upload_id} is not a SIF image the gateway can run: "
                      f"{exc.message} Upload a SIF file (`gridgate image build` makes one).",
                      field=field) from None
    except OSError as exc:
        log.error("cannot read the blob of upload %s: %s", upload_id, exc)
        raise Unavailable(f"The gateway cannot read upload {upload_id} now; try again "
                          "later.") from None
    if not squashfs:
        raise Invalid(f"Upload {upload_id}: the image's primary partition is not SquashFS; "
                      "rebuild it as a SquashFS SIF (`gridgate image build`).", field=field)
    return primary.offset


def list_files(path: Path, offset: int) -> list[str]:
    """The paths in the SquashFS partition at `offset` of the SIF at `path`."""
    argv = image_tools.unsquashfs_list_argv(str(path), offset)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                              timeout=LIST_TIMEOUT_SECONDS, check=False)
    except FileNotFoundError:
        log.error("cannot read uploaded images: %s", image_tools.missing_tool("unsquashfs"))
        raise Unavailable("The gateway cannot look inside images now (its unsquashfs is "
                          "missing); state the image's MPI in mpi.flavor and "
                          "container.mpi_version, or try again later.") from None
    except subprocess.TimeoutExpired:
        raise Unavailable(f"Listing the image took longer than {LIST_TIMEOUT_SECONDS} s; "
                          "try again later.") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Invalid(f"The image's SquashFS partition cannot be read ({why}): upload an "
                      "undamaged image.", field=IMAGE)
    return image_tools.parse_unsquashfs_list(done.stdout)


def image_mpi(path: Path, sha256: str, upload_id: str) -> MpiAbi:
    """The MPI in the SIF at `path` (content `sha256`), listed once per content."""
    with _lock:
        if sha256 in _found:
            _found.move_to_end(sha256)
            return _found[sha256]
    found = detect_mpi(list_files(path, _partition_offset(path, upload_id)))
    with _lock:
        _found[sha256] = found
        while len(_found) > CACHE_SIZE:
            _found.popitem(last=False)
    return found


def _uploaded(session: Session, store: BlobStore, owner_id: str, upload_id: str,
              field: str) -> tuple[Path, str]:
    """The stored file and sha256 of the caller's complete upload; Invalid otherwise."""
    facts = uploads.facts(session, owner_id, upload_id)
    if facts is None:
        raise Invalid(f"You have no upload {upload_id}: upload the image first "
                      "(`gridgate upload FILE`).", field=field)
    if facts.state != COMPLETE or facts.sha256 is None:
        raise Invalid(f"Upload {upload_id} is {facts.state}, not complete; finish it "
                      "(`gridgate upload FILE`) first.", field=field)
    return store.blob_path(facts.sha256), facts.sha256


def resolve(session: Session, store: BlobStore, owner_id: str, spec: JobSpec) -> JobSpec:
    """`spec` with an uploaded image checked and its MPI stated (see module); other specs
    as they are. Invalid (a 422 naming the field) when the image cannot serve the job."""
    container = spec.container
    if container is None:
        return spec
    for index, step in enumerate(container.then):
        if step.image is not None and parse_image_ref(step.image).kind is RefKind.UPLOAD:
            field = f"container.then[{index}].image"
            upload_id = parse_image_ref(step.image).path
            step_path, _ = _uploaded(session, store, owner_id, upload_id, field)
            _partition_offset(step_path, upload_id, field)
    if container.ref.kind is not RefKind.UPLOAD:
        return spec
    upload_id = container.ref.path
    path, sha256 = _uploaded(session, store, owner_id, upload_id, IMAGE)
    if container.mode is MpiMode.NONE:
        _partition_offset(path, upload_id)
        return spec
    flavor, version = reconcile(spec.mpi.flavor, container.mpi_version, container.mode,
                                image_mpi(path, sha256, upload_id))
    if (flavor, version) == (spec.mpi.flavor, container.mpi_version):
        return spec
    data = spec.model_dump(mode="json")
    data["mpi"]["flavor"] = flavor
    data["container"]["mpi_version"] = version
    return JobSpec.model_validate(data)
