"""containers.image.sif on SIF bytes laid out by the spec (sylabs/sif pkg/sif: header 128 bytes,
descriptors 585 bytes, little-endian, packed), written here field by field, and damaged in
each way the reader must refuse. tests/containers/test_image_cli.py reads siftool's own."""

from __future__ import annotations

import io
import struct
import uuid
from dataclasses import dataclass

import pytest

from containers.image.sif import (
    DESCRIPTOR,
    HEADER,
    DataType,
    FsType,
    PartType,
    SifFormatError,
    arch_of_machine,
    copy_object,
    has_squashfs_magic,
    parse_header,
    read_object,
    read_sif,
)

IMAGE_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
CREATED = 1_700_000_000
TABLE_OFFSET = 4096
SLOTS = 4


@dataclass
class Obj:
    data_type: int
    data: bytes
    extra: bytes = b""
    group: int = 0xF0000001
    link: int = 0
    name: bytes = b""


def descriptor(obj: Obj, ident: int, offset: int, used: bool = True) -> bytes:
    return DESCRIPTOR.pack(obj.data_type, used, ident, obj.group, obj.link, offset,
                           len(obj.data), len(obj.data), CREATED, CREATED + 1, 0, 0,
                           obj.name, obj.extra)


def make_sif(objects: list[Obj], *, magic: bytes = b"SIF_MAGIC\x00", version: bytes = b"01\x00",
             total: int = SLOTS, table_size: int | None = None) -> bytes:
    data_offset = TABLE_OFFSET + SLOTS * DESCRIPTOR.size
    table, data, offset = b"", b"", data_offset
    for ident, obj in enumerate(objects, start=1):
        table += descriptor(obj, ident, offset)
        data += obj.data
        offset += len(obj.data)
    table += b"\x00" * DESCRIPTOR.size * (SLOTS - len(objects))  # unused slots
    header = HEADER.pack(b"#!/usr/bin/env run-singularity\n", magic, version, b"02\x00",
                         IMAGE_ID.bytes, CREATED, CREATED + 5, SLOTS - len(objects), total,
                         TABLE_OFFSET, SLOTS * DESCRIPTOR.size if table_size is None
                         else table_size, data_offset, len(data))
    return header.ljust(TABLE_OFFSET, b"\x00") + table + data


def partition(fs: int = FsType.SQUASHFS, part: int = PartType.PRIMARY_SYSTEM) -> bytes:
    return struct.pack("<ii3s", fs, part, b"02\x00")


SQUASH = Obj(DataType.PARTITION, b"hsqs" + b"\x01" * 60, partition())
DEFFILE = Obj(DataType.DEFFILE, b"from: rootfs/\n", name=b"app.yaml")
ENV = Obj(DataType.ENV_VARS, b'{"A": "1"}\n', name=b"environment.json")


def test_the_sif_layout_sizes_match_the_spec() -> None:
    assert HEADER.size == 128 and DESCRIPTOR.size == 585


def test_read_sif_reads_header_and_used_descriptors() -> None:
    image = read_sif(io.BytesIO(make_sif([DEFFILE, ENV, SQUASH])))
    header = image.header
    assert header.launch_script == "#!/usr/bin/env run-singularity\n"
    assert (header.version, header.arch, header.id) == ("01", "amd64", IMAGE_ID)
    assert header.created_at.timestamp() == CREATED
    assert (header.descriptors_total, header.descriptors_free) == (SLOTS, 1)
    assert [d.type_name for d in image.descriptors] == ["Def.FILE", "Env.Vars", "FS"]
    assert [d.group_id for d in image.descriptors] == [1, 1, 1]  # the group mask is dropped
    assert image.descriptors[0].name == "app.yaml"
    primary = image.primary_partition()
    assert primary.id == 3 and primary.partition is not None
    assert primary.partition.description == "Squashfs/*System/amd64"
    assert image.objects(DataType.ENV_VARS) == (image.descriptors[1],)


def test_sif_objects_are_read_and_copied_at_their_offsets() -> None:
    raw = make_sif([DEFFILE, SQUASH])
    stream = io.BytesIO(raw)
    image = read_sif(stream)
    assert read_object(stream, image.descriptors[0]) == b"from: rootfs/\n"
    out = io.BytesIO()
    assert copy_object(stream, image.primary_partition(), out) == len(SQUASH.data)
    assert out.getvalue() == SQUASH.data
    assert has_squashfs_magic(stream, image.primary_partition())
    with pytest.raises(SifFormatError, match="more than the 4 read whole"):
        read_object(stream, image.descriptors[0], limit=4)


def test_sif_links_groups_and_signatures_are_decoded() -> None:
    signature = Obj(DataType.SIGNATURE, b"-----BEGIN PGP", struct.pack("<i256s", 1, b"\x12" * 20),
                    group=0, link=0xF0000001)
    image = read_sif(io.BytesIO(make_sif([SQUASH, signature])))
    sig = image.descriptors[1]
    assert (sig.group_id, sig.linked_id, sig.link_is_group) == (0, 1, True)
    assert sig.signature_hash == "SHA256" and sig.partition is None


def test_a_sif_without_primary_partition_says_so() -> None:
    data_only = Obj(DataType.PARTITION, b"hsqs", partition(part=PartType.DATA))
    image = read_sif(io.BytesIO(make_sif([DEFFILE, data_only])))
    with pytest.raises(SifFormatError, match="no primary system partition"):
        image.primary_partition()


def _past_end(raw: bytes) -> bytes:
    return raw[:-10]


DAMAGED = [
    ("empty", lambda: b"", "shorter than the 128-byte SIF header"),
    ("ELF", lambda: b"\x7fELF" + b"\x00" * 200, "no SIF_MAGIC"),
    ("magic", lambda: make_sif([SQUASH], magic=b"SIF_MAGIK\x00"), "no SIF_MAGIC"),
    ("version", lambda: make_sif([SQUASH], version=b"02\x00"), "SIF version '02'"),
    ("table beyond its size", lambda: make_sif([SQUASH], total=SLOTS + 1), "descriptor table"),
    ("table beyond the file", lambda: make_sif([SQUASH], total=1000, table_size=585_000),
     "descriptor table"),
    ("truncated partition", lambda: _past_end(make_sif([SQUASH])), "runs past the end"),
]


@pytest.mark.parametrize(("case", "raw", "message"), DAMAGED, ids=[d[0] for d in DAMAGED])
def test_read_sif_refuses_damaged_images(case: str, raw: object, message: str) -> None:
    assert callable(raw)
    with pytest.raises(SifFormatError, match=message):
        read_sif(io.BytesIO(raw()))


def test_parse_sif_header_refuses_an_impossible_time() -> None:
    raw = bytearray(make_sif([SQUASH]))
    struct.pack_into("<q", raw, 64, 2**62)  # created_at
    with pytest.raises(SifFormatError, match="impossible time"):
        parse_header(bytes(raw[:128]))


@pytest.mark.parametrize(("machine", "arch"), [("x86_64", "amd64"), ("aarch64", "arm64"),
                                                ("ppc64le", "ppc64le"), ("riscv64", "riscv64")])
def test_sif_arch_of_machine(machine: str, arch: str) -> None:
    assert arch_of_machine(machine) == arch


def test_sif_arch_of_an_unknown_machine_is_refused() -> None:
    with pytest.raises(SifFormatError, match="No SIF architecture"):
        arch_of_machine("pdp11")
