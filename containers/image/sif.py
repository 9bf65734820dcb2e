"""Reading SIF files (Singularity Image Format, spec 01): the global header, the descriptor
table and the data objects it points to, from a seekable binary stream the caller opened.

Layout, as sylabs/sif (pkg/sif: sif.go, descriptor.go, arch.go, load.go) reads and writes it:
every integer little-endian, fields packed without padding.

    global header, 128 bytes at offset 0
      launch script   32 bytes   "#!/usr/bin/env run-singularity\\n", NUL-padded
      magic           10 bytes   "SIF_MAGIC\\0"
      version          3 bytes   "01\\0"
      arch             3 bytes   "02\\0" = amd64 (see ARCH_CODES)
      id              16 bytes   a UUID
      created, modified, descriptors free, total, offset, size,
      data offset, data size     8 x int64
    descriptor table at `descriptors offset`: `total` entries of 585 bytes, unused ones
    flagged so (a new image has 48 slots)
      data type int32, used bool, id uint32, group id uint32, link uint32,
      offset, size, size with padding, created, modified, uid, gid  7 x int64,
      name 128 bytes, extra 384 bytes (per type: a partition's fs type int32,
      partition type int32, arch 3 bytes; a signature's hash type int32, entity 256 bytes)
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from typing import BinaryIO

from containers.errors import SifFormatError

MAGIC = b"SIF_MAGIC\x00"
VERSION = "01"
HEADER = struct.Struct("<32s10s3s3s16s8q")
DESCRIPTOR = struct.Struct("<i?III7q128s384s")
PARTITION_EXTRA = struct.Struct("<ii3s")
SIGNATURE_EXTRA = struct.Struct("<i256s")
SQUASHFS_MAGIC = b"hsqs"  # a SquashFS superblock's first bytes (little-endian)
# High bits of a group id / link: a group, not an object.
GROUP_MASK = 0xF0000000
COPY_BLOCK = 1 << 20

# The header's and a partition's arch field: two digits and a NUL; siftool's --partarch
# takes the same numbers.
ARCH_CODES = {
    "386": "01", "amd64": "02", "arm": "03", "arm64": "04", "ppc64": "05", "ppc64le": "06",
    "mips": "07", "mipsle": "08", "mips64": "09", "mips64le": "10", "s390x": "11",
    "riscv64": "12", "loong64": "13",
}
_ARCH_NAMES = {code: name for name, code in ARCH_CODES.items()}
# platform.machine() (the kernel's name) -> the Go name SIF uses.
_MACHINES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64",
             "i386": "386", "i686": "386", "armv7l": "arm", "ppc64le": "ppc64le",
             "ppc64": "ppc64", "s390x": "s390x", "riscv64": "riscv64",
             "loongarch64": "loong64"}


class DataType(IntEnum):
    """A data object's type (sif.go DataType)."""

    DEFFILE = 0x4001
    ENV_VARS = 0x4002
    LABELS = 0x4003
    PARTITION = 0x4004
    SIGNATURE = 0x4005
    GENERIC_JSON = 0x4006
    GENERIC = 0x4007
    CRYPTO_MESSAGE = 0x4008
    SBOM = 0x4009
    OCI_ROOT_INDEX = 0x400A
    OCI_BLOB = 0x400B


class FsType(IntEnum):
    """A partition's file system."""

    SQUASHFS = 1
    EXT3 = 2
    IMMUTABLE_OBJECTS = 3
    RAW = 4
    ENCRYPTED_SQUASHFS = 5


class PartType(IntEnum):
    """What a partition holds; Apptainer runs the (one) PRIMARY_SYSTEM partition."""

    SYSTEM = 1
    PRIMARY_SYSTEM = 2
    DATA = 3
    OVERLAY = 4


# The names `siftool list` prints, so both tools' output reads the same.
TYPE_NAMES: dict[int, str] = {
    DataType.DEFFILE: "Def.FILE", DataType.ENV_VARS: "Env.Vars",
    DataType.LABELS: "JSON.Labels", DataType.PARTITION: "FS",
    DataType.SIGNATURE: "Signature", DataType.GENERIC_JSON: "JSON.Generic",
    DataType.GENERIC: "Generic/Raw", DataType.CRYPTO_MESSAGE: "Cryptographic Message",
    DataType.SBOM: "SBOM", DataType.OCI_ROOT_INDEX: "OCI.RootIndex",
    DataType.OCI_BLOB: "OCI.Blob",
}
FS_NAMES: dict[int, str] = {FsType.SQUASHFS: "Squashfs", FsType.EXT3: "Ext3",
                            FsType.IMMUTABLE_OBJECTS: "Archive", FsType.RAW: "Raw",
                            FsType.ENCRYPTED_SQUASHFS: "Encrypted squashfs"}
PART_NAMES: dict[int, str] = {PartType.SYSTEM: "System", PartType.PRIMARY_SYSTEM: "*System",
                              PartType.DATA: "Data", PartType.OVERLAY: "Overlay"}
HASH_NAMES: dict[int, str] = {1: "SHA256", 2: "SHA384", 3: "SHA512", 4: "BLAKE2s_256",
                              5: "BLAKE2b_256"}


def arch_of_machine(machine: str) -> str:
    """The SIF (Go) name of a `platform.machine()` value, e.g. x86_64 -> amd64."""
    try:
        return _MACHINES[machine.lower()]
    except KeyError:
        raise SifFormatError(f"No SIF architecture for machine {machine!r}.") from None


@dataclass(frozen=True)
class SifHeader:
    """The global header."""

    launch_script: str
    version: str
    arch: str  # "amd64", ... or "unknown"
    id: uuid.UUID
    created_at: datetime
    modified_at: datetime
    descriptors_free: int
    descriptors_total: int
    descriptors_offset: int
    descriptors_size: int
    data_offset: int
    data_size: int


@dataclass(frozen=True)
class Partition:
    """A partition object's metadata."""

    fs_type: int
    part_type: int
    arch: str

    @property
    def description(self) -> str:
        """As `siftool list` says it: "Squashfs/*System/amd64"."""
        fs = FS_NAMES.get(self.fs_type, "Unknown")
        part = PART_NAMES.get(self.part_type, "Unknown")
        return f"{fs}/{part}/{self.arch}"


@dataclass(frozen=True)
class Descriptor:
    """One data object: where it is and what it holds."""

    data_type: int
    id: int
    group_id: int  # 0: in no group
    linked_id: int  # 0: linked to nothing
    link_is_group: bool
    offset: int
    size: int
    size_with_padding: int
    created_at: datetime
    modified_at: datetime
    name: str
    partition: Partition | None = None
    signature_hash: str | None = None

    @property
    def type_name(self) -> str:
        """"FS", "Def.FILE", ... or "Unknown (0x....)"."""
        return TYPE_NAMES.get(self.data_type, f"Unknown (0x{self.data_type:04x})")

    @property
    def is_primary_system(self) -> bool:
        return self.partition is not None and self.partition.part_type == PartType.PRIMARY_SYSTEM


@dataclass(frozen=True)
class SifImage:
    """A parsed image: its header, its (used) descriptors and the file size."""

    header: SifHeader
    descriptors: tuple[Descriptor, ...]
    file_size: int

    def objects(self, data_type: DataType) -> tuple[Descriptor, ...]:
        """The objects of `data_type`, in table order."""
        return tuple(d for d in self.descriptors if d.data_type == data_type)

    def primary_partition(self) -> Descriptor:
        """The primary system partition (what a runtime mounts as the container's root)."""
        for descriptor in self.descriptors:
            if descriptor.is_primary_system:
                return descriptor
        raise SifFormatError("The image has no primary system partition (nothing to run).")


def _text(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", "replace")


def _time(seconds: int, what: str) -> datetime:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise SifFormatError(f"{what} holds an impossible time ({seconds}).") from None


def _arch(raw: bytes) -> str:
    return _ARCH_NAMES.get(_text(raw), "unknown")


def parse_header(raw: bytes) -> SifHeader:
    """The global header from the file's first 128 bytes."""
    if len(raw) < HEADER.size:
        raise SifFormatError(f"Not a SIF image: {len(raw)} bytes, shorter than the "
                             f"{HEADER.size}-byte SIF header.")
    (launch, magic, version, arch, ident, created, modified, free, total, descr_off,
     descr_size, data_off, data_size) = HEADER.unpack_from(raw)
    if magic != MAGIC:
        raise SifFormatError("Not a SIF image: no SIF_MAGIC at byte 32.")
    if _text(version) != VERSION:
        raise SifFormatError(f"SIF version {_text(version)!r}: this reader knows version "
                             f"{VERSION} only.")
    return SifHeader(
        launch_script=_text(launch), version=VERSION, arch=_arch(arch), id=uuid.UUID(bytes=ident),
        created_at=_time(created, "The header"), modified_at=_time(modified, "The header"),
        descriptors_free=free, descriptors_total=total, descriptors_offset=descr_off,
        descriptors_size=descr_size, data_offset=data_off, data_size=data_size)


def parse_descriptor(raw: bytes) -> Descriptor | None:
    """One 585-byte descriptor; None for an unused slot."""
    (data_type, used, ident, group, link, offset, size, padded, created, modified,
     _uid, _gid, name, extra) = DESCRIPTOR.unpack_from(raw)
    if not used:
        return None
    partition = signature = None
    if data_type == DataType.PARTITION:
        fs_type, part_type, arch = PARTITION_EXTRA.unpack_from(extra)
        partition = Partition(fs_type, part_type, _arch(arch))
    elif data_type == DataType.SIGNATURE:
        hash_type, _entity = SIGNATURE_EXTRA.unpack_from(extra)
        signature = HASH_NAMES.get(hash_type, f"unknown ({hash_type})")
    what = f"Data object {ident}"
    return Descriptor(
        data_type=data_type, id=ident, group_id=group & ~GROUP_MASK,
        linked_id=link & ~GROUP_MASK, link_is_group=link & GROUP_MASK == GROUP_MASK,
        offset=offset, size=size, size_with_padding=padded,
        created_at=_time(created, what), modified_at=_time(modified, what),
        name=_text(name), partition=partition, signature_hash=signature)


def _size_of(stream: BinaryIO) -> int:
    here = stream.tell()
    try:
        return stream.seek(0, 2)
    finally:
        stream.seek(here)


def _read_at(stream: BinaryIO, offset: int, length: int) -> bytes:
    stream.seek(offset)
    return stream.read(length)


def read_sif(stream: BinaryIO) -> SifImage:
    """Parse the image in `stream` (seekable, opened by the caller in binary mode): header
    and used descriptors, each checked to lie inside the file."""
    file_size = _size_of(stream)
    header = parse_header(_read_at(stream, 0, HEADER.size))
    table_end = header.descriptors_offset + header.descriptors_size
    if (header.descriptors_total < 0 or header.descriptors_offset < HEADER.size
            or header.descriptors_total * DESCRIPTOR.size > header.descriptors_size
            or table_end > file_size):
        raise SifFormatError(
            f"The descriptor table ({header.descriptors_total} entries at byte "
            f"{header.descriptors_offset}) does not fit in the file ({file_size} bytes): "
            f"the image is truncated or damaged.")
    table = _read_at(stream, header.descriptors_offset,
                     header.descriptors_total * DESCRIPTOR.size)
    descriptors = []
    for slot in range(header.descriptors_total):
        descriptor = parse_descriptor(table[slot * DESCRIPTOR.size:(slot + 1) * DESCRIPTOR.size])
        if descriptor is None:
            continue
        if descriptor.offset < 0 or descriptor.size < 0 \
                or descriptor.offset + descriptor.size > file_size:
            raise SifFormatError(
                f"Data object {descriptor.id} ({descriptor.type_name}, {descriptor.size} bytes "
                f"at byte {descriptor.offset}) runs past the end of the file ({file_size} "
                f"bytes): the image is truncated or damaged.")
        descriptors.append(descriptor)
    return SifImage(header, tuple(descriptors), file_size)


def read_object(stream: BinaryIO, descriptor: Descriptor, limit: int = COPY_BLOCK) -> bytes:
    """A (small) object's bytes: a definition file, an environment or labels JSON."""
    if descriptor.size > limit:
        raise SifFormatError(f"Data object {descriptor.id} is {descriptor.size} bytes, more "
                             f"than the {limit} read whole; copy it out instead.")
    data = _read_at(stream, descriptor.offset, descriptor.size)
    if len(data) != descriptor.size:
        raise SifFormatError(f"Data object {descriptor.id} is cut short: the image is "
                             f"truncated.")
    return data


def copy_object(stream: BinaryIO, descriptor: Descriptor, out: BinaryIO) -> int:
    """Copy an object's bytes (a partition: a SquashFS file system) to `out`; its size."""
    stream.seek(descriptor.offset)
    left = descriptor.size
    while left:
        block = stream.read(min(COPY_BLOCK, left))
        if not block:
            raise SifFormatError(f"Data object {descriptor.id} is cut short: the image is "
                                 f"truncated.")
        out.write(block)
        left -= len(block)
    return descriptor.size


def has_squashfs_magic(stream: BinaryIO, descriptor: Descriptor) -> bool:
    """Whether the object starts like a SquashFS file system (a cheap check; the digest
    is the real one)."""
    return _read_at(stream, descriptor.offset, len(SQUASHFS_MAGIC)) == SQUASHFS_MAGIC
