"""Pure parts of staging, table-driven: output globs, duplicate dests, HTTP ranges,
find output parsing."""

from __future__ import annotations

import pytest

from adapters.transfer.listing import ListedEntry, parse_find_output
from adapters.transfer.site_fs import SiteCommandFailed
from gateway.api.http.ranges import Unsatisfiable, parse_range
from gateway.domain.staging import duplicate_dest, parse_source
from rules.output_globs import matches, select


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("*.txt", "a.txt", True),
    ("*.txt", "d/a.txt", False),
    ("d/*.txt", "d/a.txt", True),
    ("**/*.txt", "a.txt", True),
    ("**/*.txt", "d/e/a.txt", True),
    ("out/**", "out/x/y.bin", True),
    ("out/**", "outer/x", False),
    ("*", ".hidden", False),
    (".hidden", ".hidden", True),
    ("**", ".gridgate/request.json", False),
    ("**/*", "d/.gw-partial", False),
    ("r?n.log", "run.log", True),
    ("[ab].dat", "b.dat", True),
    ("[ab].dat", "c.dat", False),
])
def test_output_globs(pattern: str, path: str, hit: bool) -> None:
    assert matches(pattern, path) is hit


def test_select_sorts_and_dedupes() -> None:
    assert select(["*.log", "b*"], ["b.log", "a.log", "c.txt", "bz"]) == [
        "a.log", "b.log", "bz"]


@pytest.mark.parametrize(("dests", "clash"), [
    (["a", "b"], None),
    (["a", "b", "a"], (0, 2)),
    (["d/x", "d"], (0, 1)),
    (["d", "c", "d/x/y"], (0, 2)),
    (["dx", "d/x"], None),
])
def test_duplicate_dest(dests: list[str], clash: tuple[int, int] | None) -> None:
    assert duplicate_dest(dests) == clash


def test_sources_parse() -> None:
    site = parse_source("site://galaxy/scratch/a b/x.dat")
    assert (site.site, site.path) == ("galaxy", "/scratch/a b/x.dat")
    up = parse_source("upload:8C0F5A32-1111-4111-8111-111111111111")
    assert up.upload_id == "8c0f5a32-1111-4111-8111-111111111111"
    assert parse_source("HTTPS://example.org/x?y=1").url == "HTTPS://example.org/x?y=1"


@pytest.mark.parametrize(("header", "size", "expected"), [
    (None, 10, None),
    ("bytes=0-", 10, (0, 10)),
    ("bytes=2-4", 10, (2, 5)),
    ("bytes=5-100", 10, (5, 10)),
    ("bytes=-3", 10, (7, 10)),
    ("bytes=-30", 10, (0, 10)),
    ("bytes=0-1,4-5", 10, None),  # several ranges: the whole file
    ("items=0-1", 10, None),
    ("bytes=4-2", 10, None),
])
def test_ranges(header: str | None, size: int, expected: tuple[int, int] | None) -> None:
    assert parse_range(header, size) == expected


@pytest.mark.parametrize("header", ["bytes=10-", "bytes=-0", "bytes=11-12"])
def test_unsatisfiable_ranges(header: str) -> None:
    with pytest.raises(Unsatisfiable):
        parse_range(header, 10)


def test_find_output_keeps_any_name() -> None:
    raw = b"f 12 out/a b.txt\0l 11 out/link\0f 0 weird\nname\0"
    assert parse_find_output(raw) == [
        ListedEntry("out/a b.txt", False, 12), ListedEntry("out/link", True, 11),
        ListedEntry("weird\nname", False, 0)]
    with pytest.raises(SiteCommandFailed):
        parse_find_output(b"d 4096 somedir\0")
