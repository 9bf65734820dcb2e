"""containers.image.definition (the `image build` definition, environment files) and
containers.image.tools (argv, `unsquashfs -l` output): pure, table-driven."""

from __future__ import annotations

import json
import subprocess
from pathlib import PurePosixPath

import pytest

from containers.errors import SifFormatError
from containers.image.definition import (
    DefinitionError,
    charliecloud_environment,
    environment_json,
    environment_script,
    image_path,
    parse_definition,
    parse_environment_json,
)
from containers.image.tools import (
    missing_tool,
    mksquashfs_argv,
    parse_unsquashfs_list,
    siftool_add_argv,
    siftool_add_partition_argv,
    unsquashfs_list_argv,
)


def test_image_definition_is_parsed() -> None:
    parsed = parse_definition({"from": "rootfs/", "files": {"a.out": "/opt/app/bin//a.out"},
                               "environment": {"OMP_NUM_THREADS": 4, "MODE": "fast"}})
    assert parsed.base == "rootfs/"
    assert parsed.files == (("a.out", PurePosixPath("/opt/app/bin/a.out")),)
    assert parsed.environment == (("OMP_NUM_THREADS", "4"), ("MODE", "fast"))
    assert parse_definition({"from": "base.sif"}).files == ()


BAD_DEFINITIONS = [
    ("not a mapping", ["from", "x"], "YAML mapping"),
    ("no from", {"files": {}}, "'from' must name the base"),
    ("empty from", {"from": " "}, "'from' must name the base"),
    ("unknown key", {"from": "x", "bootstrap": "docker"}, "Unknown key(s) bootstrap"),
    ("relative destination", {"from": "x", "files": {"a": "opt/a"}}, "absolute path"),
    ("dotdot destination", {"from": "x", "files": {"a": "/opt/../etc/a"}}, "'..'"),
    ("root destination", {"from": "x", "files": {"a": "/"}}, "root '/'"),
    ("files a list", {"from": "x", "files": ["a"]}, "'files' must map"),
    ("bad variable name", {"from": "x", "environment": {"1X": "a"}}, "not a shell variable"),
    ("dash in name", {"from": "x", "environment": {"A-B": "a"}}, "not a shell variable"),
    ("list value", {"from": "x", "environment": {"A": [1]}}, "text or a number"),
    ("boolean value", {"from": "x", "environment": {"A": True}}, "quote it"),
    ("newline value", {"from": "x", "environment": {"A": "a\nb"}}, "newline"),
]


@pytest.mark.parametrize(("case", "data", "message"), BAD_DEFINITIONS,
                         ids=[b[0] for b in BAD_DEFINITIONS])
def test_image_definition_errors_name_the_key(case: str, data: object, message: str) -> None:
    with pytest.raises(DefinitionError) as info:
        parse_definition(data)
    assert message in str(info.value)


def test_image_path_is_normalized() -> None:
    assert image_path("/a/./b/") == PurePosixPath("/a/b")


def test_image_environment_script_is_sourced_by_a_shell_unchanged() -> None:
    env = {"GREETING": "it's $HOME; `x`", "N": "4"}
    script = environment_script(env)
    assert script.startswith("#!/bin/sh\n")
    # The shell that sources it (as Apptainer does) gets the values byte for byte.
    done = subprocess.run(["sh", "-c", f'{script}\nprintf "%s|%s" "$GREETING" "$N"'],
                          capture_output=True, text=True, check=True)
    assert done.stdout == "it's $HOME; `x`|4"
    appended = environment_script({"N": "5"}, existing=script)
    assert appended.startswith(script) and appended.endswith("export N=5\n")


def test_image_charliecloud_environment_merges_over_the_base() -> None:
    text = charliecloud_environment({"A": "new", "B": "x y"}, existing="A=old\nKEEP=1\n# no\n")
    assert text == "A=new\nKEEP=1\nB=x y\n"


def test_image_environment_json_round_trips() -> None:
    data = environment_json({"A": "1"}, existing={"A": "0", "B": "2"})
    assert json.loads(data) == {"A": "1", "B": "2"}
    assert parse_environment_json(data) == {"A": "1", "B": "2"}
    assert parse_environment_json(b"not json") == {} and parse_environment_json(b"[1]") == {}


def test_image_tools_argv() -> None:
    assert mksquashfs_argv("r", "o.sqfs", all_root=True)[-1] == "-all-root"
    assert "-all-root" not in mksquashfs_argv("r", "o.sqfs", all_root=False)
    assert siftool_add_partition_argv("a.sif", "r.sqfs", "amd64") == [
        "siftool", "add", "a.sif", "r.sqfs", "--groupid", "1", "--datatype", "4",
        "--parttype", "2", "--partfs", "1", "--partarch", "2"]
    assert siftool_add_partition_argv("a.sif", "r.sqfs", "arm64")[-1] == "4"
    with pytest.raises(SifFormatError, match="Unknown architecture"):
        siftool_add_partition_argv("a.sif", "r.sqfs", "vax")
    assert siftool_add_argv("a.sif", "e.json", "envvar", "environment.json") == [
        "siftool", "add", "a.sif", "e.json", "--datatype", "2", "--groupid", "1",
        "--filename", "environment.json"]
    assert unsquashfs_list_argv("a.sif", 32768) == [
        "unsquashfs", "-l", "-o", "32768", "-d", "squashfs-root", "a.sif"]


def test_image_tools_parse_unsquashfs_list() -> None:
    output = ("Parallel unsquashfs: Using 8 processors\nsquashfs-root\nsquashfs-root/bin\n"
              "squashfs-root/bin/sh\nsquashfs-root/usr/lib/libmpi.so.40\n")
    assert parse_unsquashfs_list(output) == ["/bin", "/bin/sh", "/usr/lib/libmpi.so.40"]


def test_image_missing_tool_names_the_debian_package() -> None:
    assert missing_tool("siftool") == ("siftool is not installed: install it with "
                                       "`apt-get install siftool` (Debian).")
    assert missing_tool("mksquashfs").endswith("`apt-get install squashfs-tools` (Debian).")
